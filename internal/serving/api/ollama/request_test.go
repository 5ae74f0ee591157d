package ollama

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

func ptr[T any](v T) *T { return &v }

func user(text string) []request.Message {
	return []request.Message{{Role: request.RoleUser, Content: text}}
}

func TestDecodeChatRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Decoded
	}{
		{
			name: "minimal_streams_by_default",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi")}},
		},
		{
			name: "stream_false",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: user("hi")}},
		},
		{
			name: "stream_null_is_default",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":null}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi")}},
		},
		{
			name: "options_map_to_sampling",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"options":{
				"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,"seed":42,"num_predict":12,
				"stop":["\n\n","END"],"repeat_penalty":1.1,"presence_penalty":0.5,"frequency_penalty":-0.5}}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"),
				Sampling: request.Sampling{MaxTokens: 12, Temperature: ptr(0.5), TopP: ptr(0.9), TopK: 40, MinP: 0.05,
					RepeatPenalty: 1.1, PresencePenalty: 0.5, FrequencyPenalty: -0.5, Seed: ptr(uint64(42)),
					Stop: []string{"\n\n", "END"}}}},
		},
		{
			name: "repeat_last_n",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"options":{"repeat_last_n":0}}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"),
				Sampling: request.Sampling{RepeatLastN: ptr(0)}}},
		},
		{
			name: "repeat_last_n_whole_context",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"options":{"repeat_last_n":-1.0}}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"),
				Sampling: request.Sampling{RepeatLastN: ptr(-1)}}},
		},
		{
			name: "integral_floats_and_string_stop",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"options":{"top_k":40.0,"num_predict":8.0,"stop":"END"}}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"),
				Sampling: request.Sampling{MaxTokens: 8, TopK: 40, Stop: []string{"END"}}}},
		},
		{
			name: "num_predict_minus_one_and_negative_seed_are_defaults",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":-1,"seed":-1}}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi")}},
		},
		{
			name: "num_predict_minus_two_is_default",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":-2}}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi")}},
		},
		{
			name: "ignored_options_and_neutral_samplers",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"keep_alive":"5m","truncate":true,"options":{
				"num_ctx":8192,"num_thread":8,"num_gpu":0,"use_mmap":true,"numa":false,
				"typical_p":1,"tfs_z":1.0,"mirostat":0,"mirostat_tau":5,"penalize_newline":true,"future_option":"x"}}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"), KeepAlive: dur(5 * time.Minute)}},
		},
		{
			name: "keep_alive_number",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"keep_alive":-1}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"), KeepAlive: dur(-1)}},
		},
		{
			name: "keep_alive_seconds",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"keep_alive":1.5}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"), KeepAlive: dur(1500 * time.Millisecond)}},
		},
		{
			name: "keep_alive_negative_duration_is_forever",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"keep_alive":"-5m"}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"), KeepAlive: dur(-1)}},
		},
		{
			name: "format_json_is_any_object",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"format":"json"}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"), JSONSchema: json.RawMessage(`{}`)}},
		},
		{
			name: "format_schema_is_compacted",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"format":{ "type": "object", "properties": {"a": {"type":"integer"}} }}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"),
				JSONSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`)}},
		},
		{
			name: "format_empty_string_is_text",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"format":""}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi")}},
		},
		{
			name: "think_true",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"think":true}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"),
				TemplateKwargs: map[string]any{"enable_thinking": true}}},
		},
		{
			name: "think_false",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"think":false}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"),
				TemplateKwargs: map[string]any{"enable_thinking": false}}},
		},
		{
			name: "think_level",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"think":"low"}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"),
				TemplateKwargs: map[string]any{"enable_thinking": true, "reasoning_effort": "low"}}},
		},
		{
			name: "logprobs",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":3}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"),
				Sampling: request.Sampling{Logprobs: true, TopLogprobs: 3}}},
		},
		{
			name: "tools_and_a_tool_round_trip",
			body: `{"model":"m","tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"}}}],
				"messages":[{"role":"user","content":"weather?"},
				{"role":"assistant","content":"","thinking":"hmm","tool_calls":[{"function":{"name":"get_weather","arguments":{ "city": "Paris" }}}]},
				{"role":"tool","content":"sunny","tool_name":"get_weather"}]}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true,
				Tools: []request.Tool{{Name: "get_weather", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
				Messages: []request.Message{
					{Role: request.RoleUser, Content: "weather?"},
					{Role: request.RoleAssistant, ReasoningContent: "hmm", ToolCalls: []request.ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
					{Role: request.RoleTool, Content: "sunny", Name: "get_weather"},
				}}},
		},
		{
			name: "tool_call_arguments_as_string_and_null",
			body: `{"model":"m","messages":[{"role":"assistant","content":"","tool_calls":[
				{"id":"c1","function":{"name":"a","arguments":"{\"x\":1}"}},{"function":{"name":"b"}}]},{"role":"user","content":"go"}]}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: []request.Message{
				{Role: request.RoleAssistant, ToolCalls: []request.ToolCall{{ID: "c1", Name: "a", Arguments: `{"x":1}`}, {Name: "b", Arguments: `{}`}}},
				{Role: request.RoleUser, Content: "go"},
			}}},
		},
		{
			name: "no_messages_is_a_load_request",
			body: `{"model":"m"}`,
			want: Decoded{Stream: true, Load: true, Request: request.Request{Model: "m", Chat: true, Messages: []request.Message{}}},
		},
		{
			name: "empty_messages_with_keep_alive_zero_is_a_load_request",
			body: `{"model":"m","messages":[],"keep_alive":0,"stream":false}`,
			want: Decoded{Load: true, Request: request.Request{Model: "m", Chat: true, Messages: []request.Message{}, KeepAlive: dur(0)}},
		},
		{
			name: "unknown_fields_ignored",
			body: `{"model":"m","messages":[{"role":"user","content":"hi","extra":1}],"_debug_render_only":false,"something":{}}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeChatRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tt.want)
				t.Errorf("decoded\n got %s\nwant %s", g, w)
			}
		})
	}
}

func TestDecodeGenerateRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Decoded
	}{
		{
			name: "prompt_is_a_user_message",
			body: `{"model":"m","prompt":"why?"}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("why?")}},
		},
		{
			name: "system_comes_first",
			body: `{"model":"m","prompt":"why?","system":"be brief","stream":false,"options":{"num_predict":5}}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true,
				Messages: []request.Message{{Role: request.RoleSystem, Content: "be brief"}, {Role: request.RoleUser, Content: "why?"}},
				Sampling: request.Sampling{MaxTokens: 5}}},
		},
		{
			name: "raw_is_a_completion",
			body: `{"model":"m","prompt":"<s>once upon","raw":true,"format":"json","think":true}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Prompt: "<s>once upon", JSONSchema: json.RawMessage(`{}`),
				TemplateKwargs: map[string]any{"enable_thinking": true}}},
		},
		{
			name: "empty_prompt_is_a_load_request",
			body: `{"model":"m","keep_alive":"10m"}`,
			want: Decoded{Stream: true, Load: true, Request: request.Request{Model: "m", Chat: true, Messages: user(""), KeepAlive: dur(10 * time.Minute)}},
		},
		{
			name: "empty_template_suffix_images_context_accepted",
			body: `{"model":"m","prompt":"p","template":"","suffix":"","images":[],"context":[]}`,
			want: Decoded{Stream: true, Request: request.Request{Model: "m", Chat: true, Messages: user("p")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeGenerateRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tt.want)
				t.Errorf("decoded\n got %s\nwant %s", g, w)
			}
		})
	}
}

// TestDecodeErrors checks that bad input is an invalid-request error that
// names the field and says what is wrong.
func TestDecodeErrors(t *testing.T) {
	const hi = `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name, endpoint, body, param, inMessage string
	}{
		{"empty_body", "chat", ``, "", "body is empty"},
		{"not_json", "chat", `{"model":`, "", "not valid JSON"},
		{"not_an_object", "chat", `[1]`, "", "must be a JSON object"},
		{"no_model", "chat", `{` + hi + `}`, "model", "model is required"},
		{"messages_wrong_type", "chat", `{"model":"m","messages":"hi"}`, "messages", "must be an array"},
		{"content_wrong_type", "chat", `{"model":"m","messages":[{"role":"user","content":["hi"]}]}`, "messages.content", "must be a string"},
		{"unknown_role", "chat", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, "messages[0].role", `"robot"`},
		{"images_refused", "chat", `{"model":"m","messages":[{"role":"user","content":"hi","images":["aGk="]}]}`, "messages[0].images", "text only"},
		{"tool_name_off_tool", "chat", `{"model":"m","messages":[{"role":"user","content":"hi","tool_name":"x"}]}`, "messages[0].tool_name", "role tool"},
		{"tool_call_without_name", "chat", `{"model":"m","messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"arguments":{}}}]}]}`, "messages[0].tool_calls[0].function.name", "required"},
		{"tool_call_arguments_array", "chat", `{"model":"m","messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":[1]}}]}]}`, "messages[0].tool_calls[0].function.arguments", "JSON object"},
		{"tool_wrong_type", "chat", `{"model":"m",` + hi + `,"tools":[{"type":"retrieval","function":{"name":"f"}}]}`, "tools[0].type", "function"},
		{"tool_without_name", "chat", `{"model":"m",` + hi + `,"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name", "required"},
		{"tool_parameters_not_object", "chat", `{"model":"m",` + hi + `,"tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]}`, "tools[0].function.parameters", "JSON Schema object"},
		{"format_unknown", "chat", `{"model":"m",` + hi + `,"format":"xml"}`, "format", `"xml"`},
		{"format_number", "chat", `{"model":"m",` + hi + `,"format":3}`, "format", "JSON Schema object"},
		{"think_unknown", "chat", `{"model":"m",` + hi + `,"think":"max"}`, "think", "true, false"},
		{"keep_alive_bad", "chat", `{"model":"m",` + hi + `,"keep_alive":"forever"}`, "keep_alive", "not a duration"},
		{"keep_alive_object", "chat", `{"model":"m",` + hi + `,"keep_alive":{}}`, "keep_alive", "number of seconds"},
		{"stream_wrong_type", "chat", `{"model":"m",` + hi + `,"stream":"yes"}`, "stream", "must be a boolean"},
		{"options_wrong_type", "chat", `{"model":"m",` + hi + `,"options":[1]}`, "options", "must be an object"},
		{"temperature_wrong_type", "chat", `{"model":"m",` + hi + `,"options":{"temperature":"hot"}}`, "options.temperature", "must be a number"},
		{"temperature_range", "chat", `{"model":"m",` + hi + `,"options":{"temperature":3}}`, "options.temperature", "between 0 and 2"},
		{"top_p_range", "chat", `{"model":"m",` + hi + `,"options":{"top_p":1.5}}`, "options.top_p", "between 0 and 1"},
		{"min_p_range", "chat", `{"model":"m",` + hi + `,"options":{"min_p":-0.1}}`, "options.min_p", "between 0 and 1"},
		{"repeat_penalty_negative", "chat", `{"model":"m",` + hi + `,"options":{"repeat_penalty":-1}}`, "options.repeat_penalty", "negative"},
		{"repeat_last_n_below_minus_one", "chat", `{"model":"m",` + hi + `,"options":{"repeat_last_n":-2}}`, "options.repeat_last_n", "-1 (the whole context)"},
		{"repeat_last_n_fraction", "chat", `{"model":"m",` + hi + `,"options":{"repeat_last_n":1.5}}`, "options.repeat_last_n", "must be an integer"},
		{"presence_penalty_range", "chat", `{"model":"m",` + hi + `,"options":{"presence_penalty":3}}`, "options.presence_penalty", "between -2 and 2"},
		{"frequency_penalty_range", "chat", `{"model":"m",` + hi + `,"options":{"frequency_penalty":-3}}`, "options.frequency_penalty", "between -2 and 2"},
		{"top_k_fraction", "chat", `{"model":"m",` + hi + `,"options":{"top_k":4.5}}`, "options.top_k", "integer"},
		{"top_k_negative", "chat", `{"model":"m",` + hi + `,"options":{"top_k":-1}}`, "options.top_k", "between 0"},
		{"seed_string", "chat", `{"model":"m",` + hi + `,"options":{"seed":"42"}}`, "options.seed", "integer"},
		{"num_predict_below_minus_two", "chat", `{"model":"m",` + hi + `,"options":{"num_predict":-3}}`, "options.num_predict", "-1, -2"},
		{"num_predict_huge", "chat", `{"model":"m",` + hi + `,"options":{"num_predict":1e12}}`, "options.num_predict", "between 0"},
		{"stop_wrong_type", "chat", `{"model":"m",` + hi + `,"options":{"stop":[1]}}`, "options.stop", "strings"},
		{"stop_empty", "chat", `{"model":"m",` + hi + `,"options":{"stop":[""]}}`, "options.stop", "must not be empty"},
		{"stop_too_many", "chat", `{"model":"m",` + hi + `,"options":{"stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}}`, "options.stop", "at most 16"},
		{"typical_p_refused", "chat", `{"model":"m",` + hi + `,"options":{"typical_p":0.9}}`, "options.typical_p", "not supported"},
		{"tfs_z_refused", "chat", `{"model":"m",` + hi + `,"options":{"tfs_z":0.5}}`, "options.tfs_z", "not supported"},
		{"mirostat_refused", "chat", `{"model":"m",` + hi + `,"options":{"mirostat":2}}`, "options.mirostat", "not supported"},
		{"ignored_option_still_type_checked", "chat", `{"model":"m",` + hi + `,"options":{"num_ctx":"big"}}`, "options.num_ctx", "integer"},
		{"ignored_bool_option_type_checked", "chat", `{"model":"m",` + hi + `,"options":{"use_mmap":"yes"}}`, "options.use_mmap", "boolean"},
		{"top_logprobs_range", "chat", `{"model":"m",` + hi + `,"logprobs":true,"top_logprobs":21}`, "top_logprobs", "between 0 and 20"},
		{"top_logprobs_without_logprobs", "chat", `{"model":"m",` + hi + `,"top_logprobs":2}`, "top_logprobs", "requires logprobs"},
		{"generate_no_model", "generate", `{"prompt":"p"}`, "model", "required"},
		{"generate_template", "generate", `{"model":"m","prompt":"p","template":"{{ .Prompt }}"}`, "template", "raw: true"},
		{"generate_suffix", "generate", `{"model":"m","prompt":"p","suffix":"end"}`, "suffix", "not supported"},
		{"generate_images", "generate", `{"model":"m","prompt":"p","images":["aGk="]}`, "images", "text only"},
		{"generate_context", "generate", `{"model":"m","prompt":"p","context":[1,2,3]}`, "context", "not supported"},
		{"generate_raw_with_system", "generate", `{"model":"m","prompt":"p","raw":true,"system":"s"}`, "system", "raw"},
		{"generate_prompt_wrong_type", "generate", `{"model":"m","prompt":["p"]}`, "prompt", "must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decode := DecodeChatRequest
			if tt.endpoint == "generate" {
				decode = DecodeGenerateRequest
			}
			_, err := decode([]byte(tt.body))
			wantInvalid(t, err, tt.param, tt.inMessage)
		})
	}
}

func wantInvalid(t *testing.T, err error, param, inMessage string) {
	t.Helper()
	if err == nil {
		t.Fatal("decoded without error")
	}
	e, ok := errors.AsType[*fault.Error](err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *fault.Error", err, err)
	}
	if e.Class != fault.ClassInvalid || e.Param != param || !strings.Contains(e.Message, inMessage) {
		t.Errorf("got %s param %q %q; want invalid_request param %q containing %q", e.Class, e.Param, e.Message, param, inMessage)
	}
}

func TestDecodeShowRequest(t *testing.T) {
	for _, body := range []string{`{"model":"m"}`, `{"name":"m","verbose":true}`} {
		got, err := DecodeShowRequest([]byte(body))
		if err != nil || got.Model != "m" {
			t.Errorf("%s: got %+v, %v", body, got, err)
		}
	}
	_, err := DecodeShowRequest([]byte(`{}`))
	wantInvalid(t, err, "model", "required")
	_, err = DecodeShowRequest([]byte(`{"model":1}`))
	wantInvalid(t, err, "model", "must be a string")
}

func TestDecodeEmbedRequest(t *testing.T) {
	f := false
	tests := []struct {
		name, body string
		decode     func([]byte) (request.EmbedRequest, error)
		want       request.EmbedRequest
	}{
		{"string", `{"model":"e","input":"hi"}`, DecodeEmbedRequest, request.EmbedRequest{Model: "e", Inputs: []string{"hi"}}},
		{"array", `{"model":"e","input":["a","b"],"truncate":false,"dimensions":64,"keep_alive":"1m","options":{"num_ctx":1}}`,
			DecodeEmbedRequest, request.EmbedRequest{Model: "e", Inputs: []string{"a", "b"}, Dimensions: 64}},
		{"empty_string_loads", `{"model":"e","input":""}`, DecodeEmbedRequest, request.EmbedRequest{Model: "e"}},
		{"empty_array_loads", `{"model":"e","input":[]}`, DecodeEmbedRequest, request.EmbedRequest{Model: "e"}},
		{"legacy_not_normalized", `{"model":"e","prompt":"hello"}`, DecodeEmbeddingsRequest, request.EmbedRequest{Model: "e", Inputs: []string{"hello"}, Normalize: &f}},
		{"legacy_empty_prompt", `{"model":"e","prompt":""}`, DecodeEmbeddingsRequest, request.EmbedRequest{Model: "e", Normalize: &f}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.decode([]byte(tt.body))
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	bad := []struct {
		name, body, param, in string
		decode                func([]byte) (request.EmbedRequest, error)
	}{
		{"no_model", `{"input":"x"}`, "model", "required", DecodeEmbedRequest},
		{"no_input", `{"model":"e"}`, "input", "required", DecodeEmbedRequest},
		{"token_input", `{"model":"e","input":[1]}`, "input", "token arrays", DecodeEmbedRequest},
		{"empty_item", `{"model":"e","input":["a",""]}`, "input", "input[1] is empty", DecodeEmbedRequest},
		{"dimensions_negative", `{"model":"e","input":"x","dimensions":-1}`, "dimensions", "between", DecodeEmbedRequest},
		{"keep_alive", `{"model":"e","input":"x","keep_alive":"soon"}`, "keep_alive", "duration", DecodeEmbedRequest},
		{"truncate_type", `{"model":"e","input":"x","truncate":"no"}`, "truncate", "boolean", DecodeEmbedRequest},
		{"legacy_no_prompt", `{"model":"e"}`, "prompt", "required", DecodeEmbeddingsRequest},
		{"legacy_no_model", `{"prompt":"x"}`, "model", "required", DecodeEmbeddingsRequest},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			_, err := b.decode([]byte(b.body))
			wantInvalid(t, err, b.param, b.in)
		})
	}
	// Too much text is too large, not malformed.
	_, err := DecodeEmbedRequest([]byte(`{"model":"e","input":"` + strings.Repeat("x", request.MaxEmbedBytes+1) + `"}`))
	if e, ok := errors.AsType[*fault.Error](err); !ok || e.Class != fault.ClassTooLarge {
		t.Errorf("an oversized input: %v, want too_large", err)
	}
}

func TestEmbedResponses(t *testing.T) {
	res := request.EmbedResult{Embeddings: [][]float32{{0.6, 0.8}, {1, 0}}, PromptTokens: 5}
	if got, want := marshal(t, EmbedFrom("e", res, 3*time.Millisecond)), `{"model":"e","embeddings":[[0.6,0.8],[1,0]],"total_duration":3000000,"load_duration":0,"prompt_eval_count":5}`; got != want {
		t.Errorf("embed\n got %s\nwant %s", got, want)
	}
	if got, want := marshal(t, EmbedFrom("e", request.EmbedResult{}, 0)), `{"model":"e","embeddings":[],"total_duration":0,"load_duration":0,"prompt_eval_count":0}`; got != want {
		t.Errorf("empty embed\n got %s\nwant %s", got, want)
	}
	if got, want := marshal(t, EmbeddingsFrom(res)), `{"embedding":[0.6,0.8]}`; got != want {
		t.Errorf("embeddings: got %s, want %s", got, want)
	}
	if got, want := marshal(t, EmbeddingsFrom(request.EmbedResult{})), `{"embedding":[]}`; got != want {
		t.Errorf("empty embeddings: got %s, want %s", got, want)
	}
}

// dur is a keep-alive as a request carries it.
func dur(d time.Duration) *time.Duration { return &d }
