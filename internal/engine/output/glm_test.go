package output

import (
	"reflect"
	"testing"
)

// TestGLMCalls reads GLM-4.5/4.6 tool calls (as their template prints them
// in history) through the Hermes dialect the family detection gives them.
func TestGLMCalls(t *testing.T) {
	cases := []struct {
		name, text string
		want       []Event
	}{
		{"reasoning and one call",
			"<think>Need the weather.</think>\n<tool_call>get_weather\n<arg_key>location</arg_key>\n<arg_value>São Paulo</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
			[]Event{reasoning("Need the weather."), call(0, "get_weather", `{"location":"São Paulo","days":3}`)}},
		{"no arguments",
			"<tool_call>search_web</tool_call>",
			[]Event{call(0, "search_web", `{}`)}},
		{"JSON values keep their type",
			"<tool_call>search_web\n<arg_key>sites</arg_key>\n<arg_value>[\"a.org\", \"b.org\"]</arg_value>\n<arg_key>q</arg_key>\n<arg_value>true story</arg_value>\n</tool_call>",
			[]Event{call(0, "search_web", `{"sites":["a.org","b.org"],"q":"true story"}`)}},
		{"two calls",
			"<tool_call>get_weather\n<arg_key>location</arg_key>\n<arg_value>Oslo</arg_value>\n</tool_call>\n<tool_call>search_web\n<arg_key>query</arg_key>\n<arg_value>x</arg_value>\n</tool_call>",
			[]Event{call(0, "get_weather", `{"location":"Oslo"}`), call(1, "search_web", `{"query":"x"}`)}},
		{"tool not offered",
			"<tool_call>launch\n<arg_key>n</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
			[]Event{content("launch\n<arg_key>n</arg_key>\n<arg_value>1</arg_value>\n")}},
		{"repeated key",
			"<tool_call>get_weather\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n<arg_key>a</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
			[]Event{content("get_weather\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n<arg_key>a</arg_key>\n<arg_value>2</arg_value>\n")}},
		{"key without value",
			"<tool_call>get_weather\n<arg_key>a</arg_key>\n</tool_call>",
			[]Event{content("get_weather\n<arg_key>a</arg_key>\n")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkChunkings(t, Config{Dialect: Hermes, ReasoningEnabled: true, OfferedTools: weatherTools}, c.text)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %#v\nwant %#v", got, c.want)
			}
		})
	}
}
