package openai

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

func ptr[T any](v T) *T { return &v }

func TestDecodeChatRequest(t *testing.T) {
	user := func(s string) []request.Message { return []request.Message{{Role: request.RoleUser, Content: s}} }
	tests := []struct {
		name string
		body string
		want Decoded
	}{
		{
			name: "minimal",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: user("hi")}},
		},
		{
			name: "sampling_and_stream",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":7,"temperature":0.5,"top_p":0.9,
				"seed":42,"stop":"END","presence_penalty":1,"frequency_penalty":-1,"top_k":40,"min_p":0.05,"repeat_penalty":1.1,
				"n":1,"stream":true,"stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":3}`,
			want: Decoded{Stream: true, IncludeUsage: true, Request: request.Request{Model: "m", Chat: true, Messages: user("hi"),
				Sampling: request.Sampling{MaxTokens: 7, Temperature: ptr(0.5), TopP: ptr(0.9), Seed: ptr[uint64](42), Stop: []string{"END"},
					PresencePenalty: 1, FrequencyPenalty: -1, TopK: 40, MinP: 0.05, RepeatPenalty: 1.1, Logprobs: true, TopLogprobs: 3}}},
		},
		{
			name: "max_completion_tokens_wins",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":100,"max_completion_tokens":5,"stop":["a","b"]}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: user("hi"), Sampling: request.Sampling{MaxTokens: 5, Stop: []string{"a", "b"}}}},
		},
		{
			name: "include_usage_needs_stream",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: user("hi")}},
		},
		{
			name: "seed_minus_one_is_unseeded",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"seed":-1,"repetition_penalty":1.2}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: user("hi"), Sampling: request.Sampling{RepeatPenalty: 1.2}}},
		},
		{
			name: "text_parts_joined_developer_is_system",
			body: `{"model":"m","messages":[{"role":"developer","content":"be brief"},
				{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: []request.Message{
				{Role: request.RoleSystem, Content: "be brief"}, {Role: request.RoleUser, Content: "a\nb"}}}},
		},
		{
			name: "unknown_and_ignored_fields",
			body: `{"model":"m","messages":[{"role":"user","content":"hi","extra":1}],"user":"u1","metadata":{"k":"v"},"store":false,
				"service_tier":"auto","parallel_tool_calls":true,"reasoning_effort":"low","modalities":["text"],"logit_bias":{},
				"some_future_field":{"x":[1,2]},"audio":null}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: user("hi"), TemplateKwargs: map[string]any{"reasoning_effort": "low"}}},
		},
		{
			name: "reasoning_effort_beside_kwargs",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"high","chat_template_kwargs":{"enable_thinking":true}}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: user("hi"), TemplateKwargs: map[string]any{"enable_thinking": true, "reasoning_effort": "high"}}},
		},
		{
			name: "reasoning_effort_minimal_ignored_kwargs_win",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"minimal","chat_template_kwargs":{"reasoning_effort":"low"}}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: user("hi"), TemplateKwargs: map[string]any{"reasoning_effort": "low"}}},
		},
		{
			name: "tools_and_history",
			body: `{"model":"m","messages":[{"role":"user","content":"weather?"},
				{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"city\":\"Oslo\"}"}}]},
				{"role":"tool","tool_call_id":"c1","content":"cold"}],
				"tools":[{"type":"function","function":{"name":"get","description":"weather","parameters":{"type":"object"}}}],
				"tool_choice":{"type":"function","function":{"name":"get"}}}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true,
				Messages: []request.Message{
					{Role: request.RoleUser, Content: "weather?"},
					{Role: request.RoleAssistant, ToolCalls: []request.ToolCall{{ID: "c1", Name: "get", Arguments: `{"city":"Oslo"}`}}},
					{Role: request.RoleTool, ToolCallID: "c1", Content: "cold"},
				},
				Tools:      []request.Tool{{Name: "get", Description: "weather", Parameters: json.RawMessage(`{"type":"object"}`)}},
				ToolChoice: request.ToolChoice{Mode: "function", Name: "get"}}},
		},
		{
			name: "object_arguments_tolerated",
			body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{ "a" : 1 }}}]}]}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: []request.Message{
				{Role: request.RoleAssistant, ToolCalls: []request.ToolCall{{ID: "c", Name: "f", Arguments: `{"a":1}`}}}}}},
		},
		{
			name: "json_object",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"},"tool_choice":"auto"}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: user("hi"), JSONSchema: json.RawMessage(`{}`), ToolChoice: request.ToolChoice{Mode: "auto"}}},
		},
		{
			name: "json_schema_and_kwargs",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{}}}},
				"chat_template_kwargs":{"enable_thinking":false}}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: user("hi"),
				JSONSchema: json.RawMessage(`{"type":"object","properties":{}}`), TemplateKwargs: map[string]any{"enable_thinking": false}}},
		},
		{
			name: "text_format_is_no_schema",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"text"}}`,
			want: Decoded{Request: request.Request{Model: "m", Chat: true, Messages: user("hi")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeChatRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("DecodeChatRequest: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tt.want)
				t.Fatalf("got  %s %+v\nwant %s %+v", g, got, w, tt.want)
			}
		})
	}
}

// TestDecodeChatRequestRefusals checks that every bad request is refused with
// an invalid_request error that names the offending field and says why.
func TestDecodeChatRequestRefusals(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name      string
		body      string
		param     string
		inMessage string
	}{
		{"empty_body", ``, "", "empty"},
		{"not_json", `{"model":`, "", "not valid JSON"},
		{"array_body", `[1,2]`, "", "must be a JSON object"},
		{"model_missing", `{` + msgs + `}`, "model", "required"},
		{"model_wrong_type", `{"model":7,` + msgs + `}`, "model", "must be a string"},
		{"messages_missing", `{"model":"m"}`, "messages", "required"},
		{"messages_empty", `{"model":"m","messages":[]}`, "messages", "at least one"},
		{"messages_wrong_type", `{"model":"m","messages":"hi"}`, "messages", "must be an array"},
		{"role_wrong_type", `{"model":"m","messages":[{"role":1,"content":"hi"}]}`, "messages.role", "must be a string"},
		{"role_unknown", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, "messages", "robot"},
		{"content_wrong_type", `{"model":"m","messages":[{"role":"user","content":5}]}`, "messages[0].content", "string or an array"},
		{"image_part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}]}`, "messages[0].content", `"image_url"`},
		{"audio_part", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, "messages[0].content", "text parts only"},
		{"text_part_without_text", `{"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]}`, "messages[0].content", "without text"},
		{"n_two", `{"model":"m",` + msgs + `,"n":2}`, "n", "n must be 1"},
		{"n_wrong_type", `{"model":"m",` + msgs + `,"n":"2"}`, "n", "integer"},
		{"max_tokens_absurd", `{"model":"m",` + msgs + `,"max_tokens":1000000000000}`, "max_tokens", "between 1 and"},
		{"max_tokens_overflow", `{"model":"m",` + msgs + `,"max_tokens":1e30}`, "max_tokens", "integer"},
		{"max_tokens_zero", `{"model":"m",` + msgs + `,"max_tokens":0}`, "max_tokens", "between 1 and"},
		{"max_tokens_fraction", `{"model":"m",` + msgs + `,"max_tokens":1.5}`, "max_tokens", "integer"},
		{"max_completion_tokens_negative", `{"model":"m",` + msgs + `,"max_completion_tokens":-3}`, "max_completion_tokens", "between 1 and"},
		{"temperature_string", `{"model":"m",` + msgs + `,"temperature":"hot"}`, "temperature", "must be a number"},
		{"temperature_range", `{"model":"m",` + msgs + `,"temperature":9}`, "temperature", "between 0 and 2"},
		{"top_p_range", `{"model":"m",` + msgs + `,"top_p":2}`, "top_p", "between 0 and 1"},
		{"stream_wrong_type", `{"model":"m",` + msgs + `,"stream":"yes"}`, "stream", "boolean"},
		{"stream_options_wrong_type", `{"model":"m",` + msgs + `,"stream":true,"stream_options":{"include_usage":1}}`, "stream_options.include_usage", "boolean"},
		{"stop_wrong_type", `{"model":"m",` + msgs + `,"stop":5}`, "stop", "string or an array"},
		{"stop_empty_string", `{"model":"m",` + msgs + `,"stop":[""]}`, "stop", "empty"},
		{"stop_too_many", `{"model":"m",` + msgs + `,"stop":["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]}`, "stop", "at most"},
		{"top_logprobs_range", `{"model":"m",` + msgs + `,"logprobs":true,"top_logprobs":21}`, "top_logprobs", "between 0 and 20"},
		{"top_logprobs_without_logprobs", `{"model":"m",` + msgs + `,"top_logprobs":2}`, "top_logprobs", "requires logprobs"},
		{"seed_wrong_type", `{"model":"m",` + msgs + `,"seed":"x"}`, "seed", "integer"},
		{"user_wrong_type", `{"model":"m",` + msgs + `,"user":{}}`, "user", "must be a string"},
		{"logit_bias_given", `{"model":"m",` + msgs + `,"logit_bias":{"50256":-100}}`, "logit_bias", "not supported"},
		{"audio_output", `{"model":"m",` + msgs + `,"modalities":["text","audio"]}`, "modalities", "audio"},
		{"tool_type", `{"model":"m",` + msgs + `,"tools":[{"type":"retrieval"}]}`, "tools[0].type", "function"},
		{"tool_name_missing", `{"model":"m",` + msgs + `,"tools":[{"type":"function","function":{"description":"x"}}]}`, "tools[0].function.name", "required"},
		{"tool_duplicate", `{"model":"m",` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, "tools[1].function.name", "second time"},
		{"tool_parameters_not_object", `{"model":"m",` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]}`, "tools[0].function.parameters", "object"},
		{"tool_choice_unknown_word", `{"model":"m",` + msgs + `,"tool_choice":"always"}`, "tool_choice", "always"},
		{"tool_choice_required_without_tools", `{"model":"m",` + msgs + `,"tool_choice":"required"}`, "tool_choice", "needs tools"},
		{"tool_choice_names_unknown", `{"model":"m",` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, "tool_choice", `"g"`},
		{"response_format_unknown", `{"model":"m",` + msgs + `,"response_format":{"type":"yaml"}}`, "response_format.type", "yaml"},
		{"response_format_schema_not_object", `{"model":"m",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":"s"}}}`, "response_format.json_schema.schema", "object"},
		{"tool_call_arguments_number", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":3}}]}]}`, "messages[0].tool_calls[0].function.arguments", "JSON object"},
		{"both_repeat_penalties", `{"model":"m",` + msgs + `,"repeat_penalty":1.1,"repetition_penalty":1.2}`, "repetition_penalty", "not both"},
		{"top_k_negative", `{"model":"m",` + msgs + `,"top_k":-1}`, "top_k", "between 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeChatRequest([]byte(tt.body))
			checkInvalid(t, err, tt.param, tt.inMessage)
		})
	}
}

// checkInvalid asserts that err is an invalid_request *fault.Error with the
// given param whose message contains inMessage.
func checkInvalid(t *testing.T, err error, param, inMessage string) {
	t.Helper()
	if err == nil {
		t.Fatal("accepted; want an invalid_request error")
	}
	e, ok := errors.AsType[*fault.Error](err)
	if !ok {
		t.Fatalf("error %T %v is not a *fault.Error", err, err)
	}
	if e.Class != fault.ClassInvalid {
		t.Errorf("class %q, want %q", e.Class, fault.ClassInvalid)
	}
	if e.Param != param {
		t.Errorf("param %q, want %q (message %q)", e.Param, param, e.Message)
	}
	if !strings.Contains(e.Message, inMessage) {
		t.Errorf("message %q does not contain %q", e.Message, inMessage)
	}
}

func TestDecodeCompletionRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Decoded
	}{
		{
			name: "string_prompt",
			body: `{"model":"m","prompt":"Once","max_tokens":3,"stream":true,"stream_options":{"include_usage":true},"logprobs":2,"user":"x","best_of":1,"echo":false,"suffix":""}`,
			want: Decoded{Stream: true, IncludeUsage: true, Request: request.Request{Model: "m", Prompt: "Once",
				Sampling: request.Sampling{MaxTokens: 3, Logprobs: true, TopLogprobs: 2}}},
		},
		{
			name: "array_of_one",
			body: `{"model":"m","prompt":["Once"],"stop":"\n"}`,
			want: Decoded{Request: request.Request{Model: "m", Prompt: "Once", Sampling: request.Sampling{Stop: []string{"\n"}}}},
		},
		{
			name: "logprobs_zero_means_chosen_token_only",
			body: `{"model":"m","prompt":"x","logprobs":0}`,
			want: Decoded{Request: request.Request{Model: "m", Prompt: "x", Sampling: request.Sampling{Logprobs: true}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeCompletionRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("DecodeCompletionRequest: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeCompletionRequestRefusals(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		param     string
		inMessage string
	}{
		{"prompt_missing", `{"model":"m"}`, "prompt", "required"},
		{"prompt_batch", `{"model":"m","prompt":["a","b"]}`, "prompt", "exactly one"},
		{"prompt_empty_array", `{"model":"m","prompt":[]}`, "prompt", "exactly one"},
		{"prompt_tokens", `{"model":"m","prompt":[1,2,3]}`, "prompt", "exactly one"},
		{"prompt_token_array", `{"model":"m","prompt":[[1,2]]}`, "prompt", "token arrays"},
		{"prompt_number", `{"model":"m","prompt":5}`, "prompt", "string or an array"},
		{"model_missing", `{"prompt":"x"}`, "model", "required"},
		{"n_three", `{"model":"m","prompt":"x","n":3}`, "n", "n must be 1"},
		{"best_of", `{"model":"m","prompt":"x","best_of":2}`, "best_of", "must be 1"},
		{"echo", `{"model":"m","prompt":"x","echo":true}`, "echo", "not supported"},
		{"suffix", `{"model":"m","prompt":"x","suffix":"end"}`, "suffix", "not supported"},
		{"logprobs_bool", `{"model":"m","prompt":"x","logprobs":true}`, "logprobs", "integer"},
		{"logprobs_range", `{"model":"m","prompt":"x","logprobs":50}`, "logprobs", "between 0 and 20"},
		{"max_tokens_absurd", `{"model":"m","prompt":"x","max_tokens":1000000000000}`, "max_tokens", "between 1 and"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeCompletionRequest([]byte(tt.body))
			checkInvalid(t, err, tt.param, tt.inMessage)
		})
	}
}

// fuzzSeeds are request bodies for both fuzz targets; the seeds run as
// ordinary tests.
var fuzzSeeds = []string{
	``, `{}`, `null`, `[]`, `"x"`, `{"model":`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"}]}]}`,
	`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{"a":1}}}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"required"}`,
	`{"model":"m","messages":[{"role":"user","content":null}],"stop":["a"],"max_tokens":1e300,"seed":-9223372036854775808}`,
	`{"model":"m","prompt":["x"],"logprobs":5,"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"m","prompt":"x","temperature":NaN}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"schema":  {"a":1}}}}`,
}

// fuzzDecode checks the decoder's contract: never panic; an error is always
// an invalid_request *fault.Error; an accepted request passes Validate and
// its limits.
func fuzzDecode(t *testing.T, decode func([]byte) (Decoded, error), chat bool, body []byte) {
	d, err := decode(body)
	if err != nil {
		if fault.ClassOf(err) != fault.ClassInvalid {
			t.Fatalf("error of class %q: %v", fault.ClassOf(err), err)
		}
		return
	}
	if err := d.Request.Validate(); err != nil {
		t.Fatalf("accepted a request that fails Validate: %v", err)
	}
	if d.Request.Chat != chat || d.Request.Sampling.MaxTokens > MaxTokensLimit || (d.IncludeUsage && !d.Stream) {
		t.Fatalf("accepted an out-of-contract request: %+v", d)
	}
	if _, err := json.Marshal(d.Request); err != nil {
		t.Fatalf("accepted request does not marshal: %v", err)
	}
}

func FuzzDecodeChatRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzDecode(t, DecodeChatRequest, true, body) })
}

func FuzzDecodeCompletionRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzDecode(t, DecodeCompletionRequest, false, body) })
}
