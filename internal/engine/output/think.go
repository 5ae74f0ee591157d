package output

import "strings"

const (
	tagThink      = "<think>"
	tagThinkClose = "</think>"
)

type thinkState uint8

const (
	thPre     thinkState = iota // start of output: a <think> may open here
	thReason                    // inside the think block
	thAfter                     // just after </think>: whitespace dropped
	thContent                   // the answer
)

// thinkSplitter separates a leading <think>…</think> block from the answer.
// A <think> is honoured only before any answer text; later ones are text.
// Whitespace at the start and end of the reasoning, and at the start of
// the answer after </think>, is dropped.
type thinkSplitter struct {
	st      thinkState
	atStart bool // thReason: nothing emitted yet, leading whitespace dropped
	buf     string
}

func newThinkSplitter(enabled, startInReasoning bool) thinkSplitter {
	switch {
	case startInReasoning:
		return thinkSplitter{st: thReason, atStart: true}
	case enabled:
		return thinkSplitter{st: thPre}
	}
	return thinkSplitter{st: thContent}
}

// push appends s and calls emit with each decided segment, in order.
func (t *thinkSplitter) push(s string, final bool, emit func(Kind, string)) {
	t.buf += s
	for {
		switch t.st {
		case thContent:
			if t.buf != "" {
				emit(Content, t.buf)
				t.buf = ""
			}
			return
		case thPre:
			rest := strings.TrimLeft(t.buf, " \t\r\n")
			switch {
			case strings.HasPrefix(rest, tagThink):
				t.buf, t.st, t.atStart = rest[len(tagThink):], thReason, true
			case !final && (rest == "" || isPrefixOf(rest, tagThink)):
				return
			default:
				t.st = thContent
			}
		case thAfter:
			rest := strings.TrimLeft(t.buf, " \t\r\n")
			if rest == "" {
				if final {
					t.buf = ""
				}
				return
			}
			t.buf, t.st = rest, thContent
		case thReason:
			if !t.reason(final, emit) {
				return
			}
		}
	}
}

// reason emits reasoning up to </think>; it returns false when it must wait.
func (t *thinkSplitter) reason(final bool, emit func(Kind, string)) bool {
	if t.atStart {
		t.buf = strings.TrimLeft(t.buf, " \t\r\n")
		if t.buf == "" {
			return false
		}
	}
	if e := strings.Index(t.buf, tagThinkClose); e >= 0 {
		t.emit(emit, strings.TrimRight(t.buf[:e], " \t\r\n"))
		t.buf, t.st = t.buf[e+len(tagThinkClose):], thAfter
		return true
	}
	if final {
		t.emit(emit, t.buf)
		t.buf = ""
		return false
	}
	// Hold a partial </think> and the whitespace before it, which is
	// dropped if the tag completes.
	h := len(t.buf)
	if p := partialMarker(t.buf, []string{tagThinkClose}, -1); p >= 0 {
		h = p
	}
	for h > 0 && isSpace(t.buf[h-1]) {
		h--
	}
	t.emit(emit, t.buf[:h])
	t.buf = t.buf[h:]
	return false
}

func (t *thinkSplitter) emit(emit func(Kind, string), s string) {
	if s != "" {
		emit(Reasoning, s)
		t.atStart = false
	}
}
