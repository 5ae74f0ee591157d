package output

import (
	"encoding/json"
	"strconv"
	"strings"
)

// gpt-oss's harmony format. After the prompt's <|start|>assistant the model
// writes messages, each a header, <|message|> and a body:
//
//	<|channel|>analysis<|message|>REASONING<|end|>
//	<|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//	<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}<|call|>
//
// The recipient (to=...) may also stand before <|channel|>. <|return|> and
// <|call|> end generation, so they are usually absent from the text; the
// end of the text then ends the message.
const (
	hStart     = "<|start|>"
	hChannel   = "<|channel|>"
	hMessage   = "<|message|>"
	hEnd       = "<|end|>"
	hCall      = "<|call|>"
	hReturn    = "<|return|>"
	hConstrain = "<|constrain|>"
)

// harmonyMarkers is every harmony control text; none reaches a client.
var harmonyMarkers = []string{hStart, hChannel, hMessage, hEnd, hCall, hReturn, hConstrain}

// maxHarmonyMarker is the length of the longest harmony marker.
const maxHarmonyMarker = len(hConstrain)

// harmonyHeaderOpeners begin a message header.
var harmonyHeaderOpeners = []string{hStart, hChannel}

// maxHarmonyHeader bounds a header read before <|message|>, so text that
// only looks like one is given up on quickly instead of held to the end.
const maxHarmonyHeader = 512

type harmonyState uint8

const (
	hsHeader harmonyState = iota // reading a header, up to <|message|>
	hsText                       // text outside any message: content
	hsBody                       // a reasoning or content body, streamed
	hsCall                       // a tool call's body, held until it ends
)

// harmonySplitter turns harmony messages into events: the analysis channel
// is reasoning, final and commentary are content, and a message addressed
// to functions.NAME is a call of NAME with its body as the arguments.
type harmonySplitter struct {
	tools toolSet
	newID func(index int) string
	calls int

	st   harmonyState
	kind Kind   // hsBody: Reasoning or Content
	name string // hsCall: the tool called
	from int    // hsCall: where to resume looking for the body's end
	buf  string
}

func newHarmonySplitter(tools toolSet, newID func(int) string) harmonySplitter {
	return harmonySplitter{tools: tools, newID: newID}
}

// push appends s and appends to out the events it can decide; with final
// set, everything held is decided.
func (h *harmonySplitter) push(s string, final bool, out []Event) []Event {
	h.buf += s
	for {
		var more bool
		out, more = h.step(final, out)
		if !more {
			return out
		}
	}
}

func (h *harmonySplitter) step(final bool, out []Event) ([]Event, bool) {
	switch h.st {
	case hsHeader:
		return h.header(final, out)
	case hsText:
		return h.text(final, out)
	case hsBody:
		return h.body(final, out)
	case hsCall:
		return h.call(final, out)
	}
	return out, false
}

// header waits for <|message|> and picks the body's kind from the header.
// A buffer that does not start like a header is plain text.
func (h *harmonySplitter) header(final bool, out []Event) ([]Event, bool) {
	i := skipSpace(h.buf, 0, "")
	rest := h.buf[i:]
	if rest == "" {
		if final {
			h.buf = ""
		}
		return out, false
	}
	opens := false
	for _, op := range harmonyHeaderOpeners {
		if strings.HasPrefix(rest, op) {
			opens = true
		} else if isPrefixOf(rest, op) && !final {
			return out, false
		}
	}
	if !opens {
		h.st = hsText
		return out, true
	}
	m := strings.Index(rest, hMessage)
	if m < 0 {
		if !final && len(rest) <= maxHarmonyHeader {
			return out, false
		}
		// Never completed: what it said goes out as text.
		h.buf, h.st = scrubHarmony(rest), hsText
		return out, true
	}
	head := rest[:m]
	h.buf = rest[m+len(hMessage):]
	channel, recipient := parseHarmonyHeader(head)
	switch {
	case recipient != "":
		h.st, h.name, h.from = hsCall, strings.TrimPrefix(recipient, "functions."), 0
	case channel == "analysis":
		h.st, h.kind = hsBody, Reasoning
	default: // final, commentary (a preamble for the user), or unnamed
		h.st, h.kind = hsBody, Content
	}
	return out, true
}

// parseHarmonyHeader reads the channel and the recipient (to=...) of a
// header such as "<|start|>assistant to=functions.f<|channel|>commentary
// <|constrain|>json".
func parseHarmonyHeader(head string) (channel, recipient string) {
	head = strings.ReplaceAll(head, hConstrain, " ")
	head = strings.ReplaceAll(head, hStart, " ")
	before, after, hasChannel := strings.Cut(head, hChannel)
	for _, f := range strings.Fields(before) {
		if r, ok := strings.CutPrefix(f, "to="); ok {
			recipient = r
		}
	}
	if !hasChannel {
		return "", recipient
	}
	for _, f := range strings.Fields(after) {
		if r, ok := strings.CutPrefix(f, "to="); ok {
			recipient = r
		} else if channel == "" {
			channel = f
		}
	}
	return channel, recipient
}

// text emits content up to the next header, scrubbing other markers.
func (h *harmonySplitter) text(final bool, out []Event) ([]Event, bool) {
	at, marker := firstMarker(h.buf, harmonyMarkers)
	if !final {
		if p := partialMarker(h.buf, harmonyMarkers, at); p >= 0 {
			out = appendText(out, Content, h.buf[:p])
			h.buf = h.buf[p:]
			return out, false
		}
	}
	if at < 0 {
		out = appendText(out, Content, h.buf)
		h.buf = ""
		return out, false
	}
	out = appendText(out, Content, h.buf[:at])
	if marker == hStart || marker == hChannel {
		h.buf, h.st = h.buf[at:], hsHeader
	} else {
		h.buf = h.buf[at+len(marker):]
	}
	return out, true
}

// bodyEnd finds where a body ends in s: at <|end|>, <|call|> or
// <|return|> (consumed) or at the next header (not consumed). It returns
// the body's length and how much of s the end takes, or -1.
func bodyEnd(s string) (n, skip int) {
	at, marker := firstMarker(s, harmonyMarkers)
	for at >= 0 && (marker == hMessage || marker == hConstrain) {
		// Stray header markers inside a body are scrubbed, not ends.
		next, m := firstMarker(s[at+len(marker):], harmonyMarkers)
		if next < 0 {
			return -1, 0
		}
		at, marker = at+len(marker)+next, m
	}
	switch {
	case at < 0:
		return -1, 0
	case marker == hStart || marker == hChannel:
		return at, at
	}
	return at, at + len(marker)
}

// body streams a reasoning or content body, holding only a partial marker.
func (h *harmonySplitter) body(final bool, out []Event) ([]Event, bool) {
	n, skip := bodyEnd(h.buf)
	if n >= 0 {
		out = appendText(out, h.kind, scrubHarmony(h.buf[:n]))
		h.buf, h.st = h.buf[skip:], hsHeader
		return out, true
	}
	cut := len(h.buf)
	if !final {
		if p := partialMarker(h.buf, harmonyMarkers, -1); p >= 0 {
			cut = p
		}
	}
	// A whole marker in the part sent now is a stray one: scrubbed.
	send := h.buf[:cut]
	out = appendText(out, h.kind, scrubHarmony(send))
	h.buf = h.buf[cut:]
	return out, false
}

// call holds a call's body until the message ends, then emits the call, or
// the body as content when it is not a call of an offered tool with a JSON
// object for arguments.
func (h *harmonySplitter) call(final bool, out []Event) ([]Event, bool) {
	n, skip := bodyEnd(h.buf[h.from:])
	if n < 0 && !final {
		// A marker that starts before here was whole, and was passed over.
		h.from = max(0, len(h.buf)-maxHarmonyMarker+1)
		return out, false
	}
	if n >= 0 {
		n, skip = n+h.from, skip+h.from
	}
	raw, rest := h.buf, ""
	if n >= 0 {
		raw, rest = h.buf[:n], h.buf[skip:]
	}
	h.buf = rest
	raw = scrubHarmony(raw)
	h.st = hsHeader
	args, ok := normalizeArgs(json.RawMessage(raw))
	if !ok || !h.tools.offered(h.name) {
		return appendText(out, Content, raw), true
	}
	idx := h.calls
	h.calls++
	id := "call_" + strconv.Itoa(idx)
	if h.newID != nil {
		id = h.newID(idx)
	}
	return append(out, Event{Kind: Call, ToolCall: ToolCall{Index: idx, ID: id, Name: h.name, Arguments: args}}), true
}

// scrubHarmony removes the harmony markers of s in one left-to-right pass,
// as streaming meets them: text that forms a marker only once another is
// removed stays, whatever the chunking.
func scrubHarmony(s string) string {
	var b strings.Builder
	for {
		i, m := firstMarker(s, harmonyMarkers)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i+len(m):]
	}
}
