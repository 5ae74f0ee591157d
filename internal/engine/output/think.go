package output

import "strings"

const (
	tagThink      = "<think>"
	tagThinkClose = "</think>"
	// Mistral's reasoning models (Magistral, Ministral 3 Reasoning)
	// write their reasoning between control tokens of their own.
	tagMistralThink      = "[THINK]"
	tagMistralThinkClose = "[/THINK]"
)

// thinkTags is a pair of tags that opens and closes a reasoning block.
type thinkTags struct{ open, close string }

var (
	tagsThink        = thinkTags{tagThink, tagThinkClose}
	tagsMistralThink = thinkTags{tagMistralThink, tagMistralThinkClose}
)

// thinkTagsOf is the pairs of tags a generation in dialect d may reason
// between: <think>…</think>, and for Mistral its [THINK]…[/THINK] too.
func thinkTagsOf(d Dialect) []thinkTags {
	if d == Mistral {
		return []thinkTags{tagsMistralThink, tagsThink}
	}
	return []thinkTags{tagsThink}
}

type thinkState uint8

const (
	thPre     thinkState = iota // start of output: a <think> may open here
	thReason                    // inside the think block
	thAfter                     // just after </think>: whitespace dropped
	thContent                   // the answer
)

// thinkSplitter separates a leading <think>…</think> block (or another
// pair of its tags: Mistral's [THINK]…[/THINK]) from the answer.
// A <think> is honoured only before any answer text; later ones are text.
// Whitespace at the start and end of the reasoning, and at the start of
// the answer after </think>, is dropped.
type thinkSplitter struct {
	st      thinkState
	atStart bool // thReason: nothing emitted yet, leading whitespace dropped
	buf     string
	tags    []thinkTags
	// closes are the tags that end the reasoning: the one that pairs
	// with the tag that opened it, or, when the prompt opened it, any of
	// tags' closing ones.
	closes []string
}

func newThinkSplitter(enabled, startInReasoning bool, tags []thinkTags) thinkSplitter {
	switch {
	case startInReasoning:
		t := thinkSplitter{st: thReason, atStart: true, tags: tags}
		for _, tg := range tags {
			t.closes = append(t.closes, tg.close)
		}
		return t
	case enabled:
		return thinkSplitter{st: thPre, tags: tags}
	}
	return thinkSplitter{st: thContent}
}

// opening returns the pair of tags whose opening tag starts s, or says
// whether s may yet become one (a proper prefix of an opening tag).
func (t *thinkSplitter) opening(s string) (tg thinkTags, ok, partial bool) {
	for _, tg := range t.tags {
		if strings.HasPrefix(s, tg.open) {
			return tg, true, false
		}
		partial = partial || isPrefixOf(s, tg.open)
	}
	return thinkTags{}, false, partial
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
			tg, ok, partial := t.opening(rest)
			switch {
			case ok:
				t.buf, t.st, t.atStart = rest[len(tg.open):], thReason, true
				t.closes = []string{tg.close}
			case !final && (rest == "" || partial):
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
	e, n := -1, 0
	for _, c := range t.closes {
		if i := strings.Index(t.buf, c); i >= 0 && (e < 0 || i < e) {
			e, n = i, len(c)
		}
	}
	if e >= 0 {
		t.emit(emit, strings.TrimRight(t.buf[:e], " \t\r\n"))
		t.buf, t.st = t.buf[e+n:], thAfter
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
	if p := partialMarker(t.buf, t.closes, -1); p >= 0 {
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
