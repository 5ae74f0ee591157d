package output

import (
	"slices"
	"testing"
)

// TestDialectMarkers: every marker a dialect's parser looks for is among
// its Markers, which the runner keeps in the text when a vocabulary types
// them as control tokens. Without them a Kimi K2 call is lost: the same
// generation with its control tokens decoded to nothing is plain text.
func TestDialectMarkers(t *testing.T) {
	for d := range Dialect(len(dialectNames)) {
		ms := d.Markers()
		want := []string{tagThink, tagThinkClose}
		for _, tg := range thinkTagsOf(d) {
			want = append(want, tg.open, tg.close)
		}
		if o := d.opener(); o != "" {
			want = append(want, o)
		}
		if m, ok := d.section(); ok {
			want = append(want, m.all()...)
		}
		if d == Harmony {
			want = append(want, harmonyMarkers...)
		}
		for _, w := range want {
			if !slices.Contains(ms, w) {
				t.Errorf("%s: %q is not among its markers %q", d, w, ms)
			}
		}
	}
	cfg := Config{Dialect: Kimi, OfferedTools: []string{"get_weather"}}
	kept := "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"location\": \"Oslo\"}<|tool_call_end|><|tool_calls_section_end|>"
	dropped := "functions.get_weather:0{\"location\": \"Oslo\"}"
	calls := func(text string) int {
		p, err := NewParser(cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range append(p.Push(text), p.Close()...) {
			if ev.Kind == Call {
				n++
			}
		}
		return n
	}
	if calls(kept) != 1 || calls(dropped) != 0 {
		t.Errorf("calls with the markers %d, without %d; want 1 and 0", calls(kept), calls(dropped))
	}
}
