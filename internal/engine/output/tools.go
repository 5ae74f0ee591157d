package output

import (
	"strconv"
	"strings"
)

// toolState is where the tool stage is in the answer text.
type toolState uint8

const (
	stText         toolState = iota // ordinary content
	stHold                          // start of answer or just after a call: whitespace held
	stTagged                        // inside <tool_call> ... </tool_call>
	stPython                        // just after <|python_tag|>
	stJSON                          // inside a bare JSON call object
	stMistral                       // just after [TOOL_CALLS]
	stMistralArgs                   // after NAME[ARGS], before the object
	stMistralJSON                   // inside the [ARGS] object
	stMistralArray                  // inside the [TOOL_CALLS] JSON array
	stSection                       // inside a DeepSeek or Kimi call section
)

// maxNameLen bounds a Mistral tool name read before [ARGS], so a marker
// followed by prose is given up on quickly instead of held to the end.
const maxNameLen = 256

// toolStage reads tool calls out of answer text. It holds back only an
// unfinished block or a partial marker.
type toolStage struct {
	dialect Dialect // NoDialect when the request offered no tools
	tools   toolSet
	newID   func(index int) string
	calls   int

	st        toolState
	afterCall bool
	buf       string
	closeFrom int      // stTagged: where to resume looking for </tool_call>
	scan      jsonScan // stJSON, stMistralJSON, stMistralArray
	name      string   // stMistralArgs, stMistralJSON
}

func newToolStage(d Dialect, tools toolSet, newID func(int) string) toolStage {
	t := toolStage{dialect: d, tools: tools, newID: newID}
	if d != NoDialect {
		t.st = stHold
	}
	return t
}

// push appends s and appends to out the events it can decide. With final
// set, everything held is decided.
func (t *toolStage) push(s string, final bool, out []Event) []Event {
	t.buf += s
	for {
		var more bool
		out, more = t.step(final, out)
		if !more {
			return out
		}
	}
}

// step makes one decision; more is false when it must wait for input (or,
// when final, has consumed everything).
func (t *toolStage) step(final bool, out []Event) ([]Event, bool) {
	switch t.st {
	case stText:
		return t.text(final, out)
	case stHold:
		return t.hold(final, out)
	case stTagged:
		e := strings.Index(t.buf[t.closeFrom:], tagToolCallClose)
		if e < 0 && !final {
			t.closeFrom = max(0, len(t.buf)-len(tagToolCallClose)+1)
			return out, false
		}
		inner, rest := t.buf, ""
		if e >= 0 {
			inner, rest = t.buf[:t.closeFrom+e], t.buf[t.closeFrom+e+len(tagToolCallClose):]
		}
		t.buf = rest
		name, args, ok := t.tools.parseTagged(inner)
		return t.finish(out, inner, name, args, ok), true
	case stSection:
		m, _ := t.dialect.section()
		e := strings.Index(t.buf[t.closeFrom:], m.end)
		if e < 0 && !final {
			t.closeFrom = max(0, len(t.buf)-len(m.end)+1)
			return out, false
		}
		inner, rest := t.buf, ""
		if e >= 0 {
			inner, rest = t.buf[:t.closeFrom+e], t.buf[t.closeFrom+e+len(m.end):]
		}
		t.buf = rest
		return t.sectionCalls(out, m, inner), true
	case stPython:
		i := skipSpace(t.buf, 0, "")
		if i == len(t.buf) {
			return t.waitOrDrop(final, out)
		}
		if t.buf[i] != '{' {
			t.st = stText // not a call: the marker goes, the text stays
			return out, true
		}
		t.buf, t.st, t.scan = t.buf[i:], stJSON, jsonScan{}
		return out, true
	case stJSON, stMistralJSON, stMistralArray:
		end := t.scan.advance(t.buf)
		if end < 0 {
			if !final {
				return out, false
			}
			end = len(t.buf)
		}
		raw := t.buf[:end]
		t.buf = t.buf[end:]
		switch t.st {
		case stMistralArray:
			return t.mistralArray(out, raw), true
		case stMistralJSON:
			args, ok := normalizeArgs([]byte(raw))
			ok = ok && t.tools.offered(t.name)
			return t.finish(out, t.name+raw, t.name, args, ok), true
		}
		name, args, ok := t.tools.parseJSONCall(raw)
		return t.finish(out, raw, name, args, ok), true
	case stMistral:
		return t.mistral(final, out)
	case stMistralArgs:
		i := skipSpace(t.buf, 0, "")
		if i == len(t.buf) && !final {
			return out, false
		}
		if i == len(t.buf) || t.buf[i] != '{' {
			t.st = stText
			return appendText(out, Content, t.name), true
		}
		t.buf, t.st, t.scan = t.buf[i:], stMistralJSON, jsonScan{}
		return out, true
	}
	return out, false
}

// text emits content up to the next marker, scrubbing markers and opening
// a block at the dialect's opener.
func (t *toolStage) text(final bool, out []Event) ([]Event, bool) {
	at, marker := firstMarker(t.buf, markerVocabulary)
	if !final {
		if p := partialMarker(t.buf, markerVocabulary, at); p >= 0 {
			out = appendText(out, Content, t.buf[:p])
			t.buf = t.buf[p:]
			return out, false
		}
	}
	if at < 0 {
		out = appendText(out, Content, t.buf)
		t.buf = ""
		return out, false
	}
	out = appendText(out, Content, t.buf[:at])
	t.buf = t.buf[at+len(marker):]
	if marker == t.dialect.opener() {
		t.open(marker)
	}
	return out, true
}

// hold waits through whitespace at the start of the answer or after a call:
// it is dropped if a block follows and kept as content otherwise.
func (t *toolStage) hold(final bool, out []Event) ([]Event, bool) {
	extra := ""
	if t.afterCall && t.dialect == Llama3 {
		extra = ";" // Llama separates parallel calls with ';'
	}
	i := skipSpace(t.buf, 0, extra)
	if i == len(t.buf) {
		return t.waitOrDrop(final, out)
	}
	rest := t.buf[i:]
	op := t.dialect.opener()
	switch {
	case strings.HasPrefix(rest, op):
		t.buf = rest[len(op):]
		t.open(op)
	case isPrefixOf(rest, op) && !final:
		return out, false
	case t.dialect == Llama3 && rest[0] == '{':
		t.buf, t.st, t.scan = rest, stJSON, jsonScan{}
	default:
		t.st = stText
	}
	return out, true
}

// waitOrDrop handles a buffer of only whitespace: wait for more, or at the
// end drop it (whitespace around markup is not content).
func (t *toolStage) waitOrDrop(final bool, out []Event) ([]Event, bool) {
	if final {
		t.buf = ""
	}
	return out, false
}

func (t *toolStage) open(marker string) {
	switch marker {
	case tagToolCall:
		t.st, t.closeFrom = stTagged, 0
	case tagPythonTag:
		t.st = stPython
	case tagToolCalls:
		t.st = stMistral
	case deepSeekSection.begin, kimiSection.begin:
		t.st, t.closeFrom = stSection, 0
	}
}

// mistral reads what follows [TOOL_CALLS]: a JSON array, or NAME then
// [ARGS] (optionally NAME[CALL_ID]ID[ARGS]).
func (t *toolStage) mistral(final bool, out []Event) ([]Event, bool) {
	i := skipSpace(t.buf, 0, "")
	if i == len(t.buf) {
		return t.waitOrDrop(final, out)
	}
	if r := t.buf[i:]; !final && (isPrefixOf(r, tagArgs) || isPrefixOf(r, tagCallID)) {
		return out, false
	}
	if t.buf[i] == '[' && !strings.HasPrefix(t.buf[i:], tagArgs) && !strings.HasPrefix(t.buf[i:], tagCallID) {
		t.buf, t.st, t.scan = t.buf[i:], stMistralArray, jsonScan{}
		return out, true
	}
	j := i
	for j < len(t.buf) && j-i <= maxNameLen && isNameByte(t.buf[j]) {
		j++
	}
	if j == len(t.buf) && !final && j-i <= maxNameLen {
		return out, false
	}
	rest := t.buf[j:]
	if j > i && j-i <= maxNameLen {
		if r, ok := strings.CutPrefix(rest, tagCallID); ok {
			k := 0
			for k < len(r) && isNameByte(r[k]) {
				k++
			}
			if k == len(r) && !final {
				return out, false
			}
			rest = r[k:]
		}
		if r, ok := strings.CutPrefix(rest, tagArgs); ok {
			t.name, t.buf, t.st = t.buf[i:j], r, stMistralArgs
			return out, true
		}
		if !final && (isPrefixOf(rest, tagArgs) || isPrefixOf(rest, tagCallID)) {
			return out, false
		}
	}
	t.st = stText // not a call: the marker goes, the text stays
	return out, true
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// mistralArray turns a [TOOL_CALLS] array into calls; elements that are not
// calls to offered tools come back as content.
func (t *toolStage) mistralArray(out []Event, raw string) []Event {
	items, ok := splitArray(raw)
	if !ok {
		return t.finish(out, raw, "", "", false)
	}
	called := false
	for _, item := range items {
		if name, args, ok := t.tools.parseJSONCall(item); ok {
			out = t.appendCall(out, name, args)
			called = true
		} else {
			out = appendText(out, Content, scrub(item))
		}
	}
	t.st, t.afterCall = stText, false
	if called {
		t.st, t.afterCall = stHold, true
	}
	return out
}

// finish ends a block: a call when ok, else its text (markers removed) as
// content.
func (t *toolStage) finish(out []Event, raw, name, args string, ok bool) []Event {
	if !ok {
		t.st, t.afterCall = stText, false
		return appendText(out, Content, scrub(raw))
	}
	t.st, t.afterCall = stHold, true
	return t.appendCall(out, name, args)
}

func (t *toolStage) appendCall(out []Event, name, args string) []Event {
	idx := t.calls
	t.calls++
	id := "call_" + strconv.Itoa(idx)
	if t.newID != nil {
		id = t.newID(idx)
	}
	return append(out, Event{Kind: Call, ToolCall: ToolCall{Index: idx, ID: id, Name: name, Arguments: args}})
}

func appendText(out []Event, k Kind, s string) []Event {
	if s == "" {
		return out
	}
	if n := len(out); n > 0 && out[n-1].Kind == k {
		out[n-1].Text += s
		return out
	}
	return append(out, Event{Kind: k, Text: s})
}
