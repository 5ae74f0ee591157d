package output

import (
	"encoding/json"
	"strings"
)

// sectionMarkers are the markers of a dialect that wraps its calls in one
// section: BEGIN (CALL_BEGIN head ARGS_SEP arguments CALL_END)* END.
type sectionMarkers struct {
	begin, end, callBegin, callEnd, argsSep string
}

// DeepSeek V3/V3.1/R1: the head is the tool's name (V3.1) or "function",
// with the name and a ```json fence after the separator (R1).
var deepSeekSection = sectionMarkers{
	begin: "<｜tool▁calls▁begin｜>", end: "<｜tool▁calls▁end｜>",
	callBegin: "<｜tool▁call▁begin｜>", callEnd: "<｜tool▁call▁end｜>", argsSep: "<｜tool▁sep｜>",
}

// Kimi K2: the head is "functions.NAME:INDEX".
var kimiSection = sectionMarkers{
	begin: "<|tool_calls_section_begin|>", end: "<|tool_calls_section_end|>",
	callBegin: "<|tool_call_begin|>", callEnd: "<|tool_call_end|>", argsSep: "<|tool_call_argument_begin|>",
}

func (m sectionMarkers) all() []string {
	return []string{m.begin, m.end, m.callBegin, m.callEnd, m.argsSep}
}

// section returns the section markers of d, if it has them.
func (d Dialect) section() (sectionMarkers, bool) {
	switch d {
	case DeepSeek:
		return deepSeekSection, true
	case Kimi:
		return kimiSection, true
	}
	return sectionMarkers{}, false
}

// sectionCalls turns the inside of a call section into calls; calls that
// do not parse, or name tools not offered, come back as content.
func (t *toolStage) sectionCalls(out []Event, m sectionMarkers, inner string) []Event {
	called := false
	for {
		b := strings.Index(inner, m.callBegin)
		if b < 0 {
			out = appendText(out, Content, scrub(strings.TrimSpace(inner)))
			break
		}
		out = appendText(out, Content, scrub(strings.TrimSpace(inner[:b])))
		call, rest, _ := strings.Cut(inner[b+len(m.callBegin):], m.callEnd)
		inner = rest
		if name, args, ok := t.tools.parseSectionCall(m, call); ok {
			out = t.appendCall(out, name, args)
			called = true
		} else {
			out = appendText(out, Content, scrub(call))
		}
	}
	t.st, t.afterCall = stText, false
	if called {
		t.st, t.afterCall = stHold, true
	}
	return out
}

// parseSectionCall reads one call: head, separator, arguments.
func (ts toolSet) parseSectionCall(m sectionMarkers, call string) (name, args string, ok bool) {
	head, raw, found := strings.Cut(call, m.argsSep)
	if !found {
		return "", "", false
	}
	name = strings.TrimSpace(head)
	switch m {
	case kimiSection:
		name = strings.TrimPrefix(name, "functions.")
		if i := strings.LastIndexByte(name, ':'); i >= 0 {
			name = name[:i]
		}
	case deepSeekSection:
		if n, fenced, ok := strings.Cut(raw, "```json"); ok && name == "function" {
			name = strings.TrimSpace(n)
			raw, _, _ = strings.Cut(fenced, "```")
		}
	}
	if name == "" || !ts.offered(name) {
		return "", "", false
	}
	args, ok = normalizeArgs(json.RawMessage(raw))
	return name, args, ok
}
