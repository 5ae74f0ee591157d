package output

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParser checks that no input panics the parser and that feeding the
// text one byte at a time gives the same events as feeding it whole.
func FuzzParser(f *testing.F) {
	seeds := []string{
		"",
		"plain answer",
		"<think>\nplan\n</think>\n\nanswer",
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}\n</tool_call>",
		"<tool_call>\n<function=get_weather>\n<parameter=location>\nOslo\n</parameter>\n</function>\n</tool_call>",
		"<tool_call>{\"name\": oops</tool_call>",
		"{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Berlin\"}}; {\"name\": \"search_web\", \"parameters\": {}}",
		"<|python_tag|>{\"name\": \"print\", \"parameters\": {}}<|eom_id|>",
		"[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {}}, {\"name\": \"x\"}]",
		"[TOOL_CALLS]get_weather[CALL_ID]abc[ARGS]{\"a\": \"}\"}[TOOL_CALLS]search_web[ARGS]{}",
		"[TOOL_CALLS][ARGS][CALL_ID]<tool_call></tool_call>",
		"plan</think>x<think>y",
		"{\"a\": \"\\\"}\", \"b\": [{]}",
		"<think>x</think><tool_call>get_weather\n<arg_key>location</arg_key>\n<arg_value>Oslo</arg_value>\n</tool_call>",
	}
	for i, s := range seeds {
		f.Add(s, uint8(i%5), uint8(i))
	}
	harmony := []string{
		"<|channel|>analysis<|message|>plan<|end|><|start|>assistant<|channel|>final<|message|>answer<|return|>",
		"<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\": \"Oslo\"}<|call|>",
		"<|start|>assistant to=functions.x<|channel|>commentary json<|message|>{}<|end|><|channel|>final<|message|><|mes<|message|>sage|>",
		"text<|end|><|channel|><|constrain|>",
	}
	sections := []struct {
		d    Dialect
		text string
	}{
		{DeepSeek, "a<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"location\": \"Oslo\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>b"},
		{DeepSeek, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>x\n```json\n{}\n```<｜tool▁call▁end｜>"},
		{Kimi, "<|tool_calls_section_begin|><|tool_call_begin|>functions.x:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>"},
	}
	for _, s := range sections {
		f.Add(s.text, uint8(s.d), uint8(4))
	}
	for _, s := range harmony {
		f.Add(s, uint8(Harmony), uint8(0))
		f.Add(s, uint8(Harmony), uint8(4))
	}
	f.Fuzz(func(t *testing.T, text string, dialect, flags uint8) {
		cfg := Config{
			Dialect:          Dialect(dialect % 8),
			ReasoningEnabled: flags&1 != 0,
			StartInReasoning: flags&2 != 0,
		}
		if flags&4 != 0 {
			cfg.OfferedTools = []string{"get_weather", "search_web", "x"}
		}
		whole := parseChunks(t, cfg, text, 0)
		bytewise := parseChunks(t, cfg, text, 1)
		if !reflect.DeepEqual(whole, bytewise) {
			t.Fatalf("one-byte chunks differ from the whole string:\n bytes %#v\n whole %#v", bytewise, whole)
		}
		for _, e := range whole {
			if e.Kind == Call && !strings.HasPrefix(e.ToolCall.Arguments, "{") {
				t.Fatalf("call arguments %q are not an object", e.ToolCall.Arguments)
			}
		}
	})
}

// FuzzStopMatcher checks one-byte streaming against the reference cut.
func FuzzStopMatcher(f *testing.F) {
	f.Add("hello END world", "END", "\n\n")
	f.Add("abcabd", "abd", "bca")
	f.Add("", "", "x")
	f.Fuzz(func(t *testing.T, text, stop1, stop2 string) {
		stops := []string{stop1, stop2}
		chunks := make([]string, len(text))
		for i := range len(text) {
			chunks[i] = text[i : i+1]
		}
		got, stopped := runStop(stops, chunks)
		want, wantStopped := referenceStop(stops, text)
		if got != want || stopped != wantStopped {
			t.Fatalf("stops %q text %q: got (%q, %v), want (%q, %v)", stops, text, got, stopped, want, wantStopped)
		}
	})
}
