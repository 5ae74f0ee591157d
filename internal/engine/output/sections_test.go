package output

import (
	"reflect"
	"testing"
)

// TestSectionCalls reads DeepSeek (V3.1 and R1 forms) and Kimi K2 call
// sections, as their templates print them in history, for every chunking.
func TestSectionCalls(t *testing.T) {
	cases := []struct {
		name    string
		dialect Dialect
		cfg     Config
		text    string
		want    []Event
	}{
		{"deepseek v3.1 two calls", DeepSeek, Config{},
			"Let me look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"location\": \"Oslo\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>search_web<｜tool▁sep｜>{\"query\": \"x\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			[]Event{content("Let me look."), call(0, "get_weather", `{"location":"Oslo"}`), call(1, "search_web", `{"query":"x"}`)}},
		{"deepseek v3.1 after reasoning", DeepSeek, Config{StartInReasoning: true},
			"Need the weather.</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"location\": \"Oslo\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			[]Event{reasoning("Need the weather."), call(0, "get_weather", `{"location":"Oslo"}`)}},
		{"deepseek r1 fenced", DeepSeek, Config{},
			"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"location\": \"Oslo\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			[]Event{call(0, "get_weather", `{"location":"Oslo"}`)}},
		{"deepseek section cut short", DeepSeek, Config{},
			"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"location\": \"Oslo\"}<｜tool▁call▁end｜>",
			[]Event{call(0, "get_weather", `{"location":"Oslo"}`)}},
		{"deepseek tool not offered", DeepSeek, Config{},
			"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>launch<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			[]Event{content("launch{}")}},
		{"kimi two calls", Kimi, Config{},
			"<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"location\": \"Oslo, Norway\"}<|tool_call_end|><|tool_call_begin|>functions.search_web:1<|tool_call_argument_begin|>{\"query\": \"Rome\", \"max_results\": 3}<|tool_call_end|><|tool_calls_section_end|>",
			[]Event{call(0, "get_weather", `{"location":"Oslo, Norway"}`), call(1, "search_web", `{"query":"Rome","max_results":3}`)}},
		{"kimi bad arguments", Kimi, Config{},
			"Sure. <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>Oslo<|tool_call_end|><|tool_calls_section_end|>",
			[]Event{content("Sure. functions.get_weather:0Oslo")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Dialect, cfg.OfferedTools = c.dialect, weatherTools
			got := checkChunkings(t, cfg, c.text)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %#v\nwant %#v", got, c.want)
			}
		})
	}
}
