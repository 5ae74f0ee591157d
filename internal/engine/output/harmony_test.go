package output

import (
	"reflect"
	"testing"
)

// TestHarmony splits gpt-oss harmony output (as the tokenizer renders it:
// <|return|> and <|call|> end generation and are not in the text) into
// reasoning, content and calls, the same for every chunking.
func TestHarmony(t *testing.T) {
	const analysis = "<|channel|>analysis<|message|>The user asks for weather.<|end|>"
	cases := []struct {
		name  string
		tools []string
		text  string
		want  []Event
	}{
		{"final only", nil,
			"<|channel|>final<|message|>Hello there.",
			[]Event{content("Hello there.")}},
		{"analysis then final", nil,
			analysis + "<|start|>assistant<|channel|>final<|message|>It is sunny.",
			[]Event{reasoning("The user asks for weather."), content("It is sunny.")}},
		{"final ended by return", nil,
			"<|channel|>final<|message|>Done.<|return|>",
			[]Event{content("Done.")}},
		{"call with constrain", weatherTools,
			analysis + "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\": \"São Paulo\"}",
			[]Event{reasoning("The user asks for weather."), call(0, "get_weather", `{"location":"São Paulo"}`)}},
		{"call ended by call marker", weatherTools,
			"<|channel|>commentary to=functions.get_weather json<|message|>{\"location\":\"Oslo\"}<|call|>",
			[]Event{call(0, "get_weather", `{"location":"Oslo"}`)}},
		{"recipient before channel", weatherTools,
			"<|start|>assistant to=functions.search_web<|channel|>commentary json<|message|>{\"query\": \"go\"}",
			[]Event{call(0, "search_web", `{"query":"go"}`)}},
		{"two calls", weatherTools,
			"<|channel|>commentary to=functions.get_weather<|message|>{}<|end|><|start|>assistant<|channel|>commentary to=functions.search_web<|message|>{\"query\":\"x\"}",
			[]Event{call(0, "get_weather", `{}`), call(1, "search_web", `{"query":"x"}`)}},
		{"double-encoded arguments", weatherTools,
			"<|channel|>commentary to=functions.get_weather<|message|>\"{\\\"location\\\": \\\"Rome\\\"}\"",
			[]Event{call(0, "get_weather", `{"location":"Rome"}`)}},
		{"tool not offered", weatherTools,
			"<|channel|>commentary to=functions.launch<|message|>{\"n\": 1}",
			[]Event{content(`{"n": 1}`)}},
		{"no tools offered", nil,
			"<|channel|>commentary to=functions.get_weather<|message|>{\"location\": \"Oslo\"}",
			[]Event{content(`{"location": "Oslo"}`)}},
		{"arguments not an object", weatherTools,
			"<|channel|>commentary to=functions.get_weather<|message|>Oslo",
			[]Event{content("Oslo")}},
		{"commentary preamble is content", weatherTools,
			"<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{}",
			[]Event{content("Let me check."), call(0, "get_weather", "{}")}},
		{"reasoning cut short", nil,
			"<|channel|>analysis<|message|>Thinking about it",
			[]Event{reasoning("Thinking about it")}},
		{"plain text without headers", nil,
			"Just an answer.",
			[]Event{content("Just an answer.")}},
		{"stray markers are scrubbed", nil,
			"<|channel|>final<|message|>a<|constrain|>b<|message|>c",
			[]Event{content("abc")}},
		{"header never completed", nil,
			"<|channel|>final and more",
			[]Event{content("final and more")}},
		{"text then header", nil,
			"Hi<|end|><|channel|>final<|message|>there",
			[]Event{content("Hithere")}},
		{"body ended by a new header", nil,
			"<|channel|>analysis<|message|>plan<|start|>assistant<|channel|>final<|message|>ok",
			[]Event{reasoning("plan"), content("ok")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkChunkings(t, Config{Dialect: Harmony, OfferedTools: c.tools}, c.text)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %#v\nwant %#v", got, c.want)
			}
		})
	}
}

// TestHarmonyStreamsReasoning checks that reasoning and content leave the
// parser as they arrive, holding back only a possible marker.
func TestHarmonyStreamsReasoning(t *testing.T) {
	p := mustParser(t, Config{Dialect: Harmony})
	if ev := p.Push("<|channel|>analysis<|message|>Let me think<|e"); !reflect.DeepEqual(ev, []Event{reasoning("Let me think")}) {
		t.Fatalf("first push gave %#v", ev)
	}
	if ev := p.Push("nd|><|start|>assistant<|channel|>final<|message|>Yes"); !reflect.DeepEqual(ev, []Event{content("Yes")}) {
		t.Fatalf("second push gave %#v", ev)
	}
	if ev := p.Close(); len(ev) != 0 {
		t.Fatalf("close gave %#v", ev)
	}
}
