package anthropic

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

// base is the smallest valid body; tests add fields to it.
const base = `"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]`

func body(extra string) string {
	if extra == "" {
		return "{" + base + "}"
	}
	return "{" + base + "," + extra + "}"
}

func user(text string) request.Message { return request.Message{Role: request.RoleUser, Content: text} }

// want returns the request base decodes to, changed by edit.
func want(edit func(r *request.Request)) request.Request {
	r := request.Request{Model: "m", Chat: true, Messages: []request.Message{user("hi")}, Sampling: request.Sampling{MaxTokens: 64}}
	if edit != nil {
		edit(&r)
	}
	return r
}

func TestDecodeMessagesRequest(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		want   request.Request
		stream bool
	}{
		{"minimal", body(""), want(nil), false},
		{"stream", body(`"stream":true`), want(nil), true},
		{"stream_false", body(`"stream":false`), want(nil), false},
		{"system_string", body(`"system":"be brief"`), want(func(r *request.Request) {
			r.Messages = []request.Message{{Role: request.RoleSystem, Content: "be brief"}, user("hi")}
		}), false},
		{"system_blocks", body(`"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b"}]`), want(func(r *request.Request) {
			r.Messages = []request.Message{{Role: request.RoleSystem, Content: "a\nb"}, user("hi")}
		}), false},
		{"system_null", body(`"system":null`), want(nil), false},
		{"sampling", body(`"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["\n\n","END"]`), want(func(r *request.Request) {
			r.Sampling.Temperature, r.Sampling.TopP, r.Sampling.TopK = ptr(0.5), ptr(0.9), 40
			r.Sampling.Stop = []string{"\n\n", "END"}
		}), false},
		{"ignored_fields", body(`"metadata":{"user_id":"u-1"},"service_tier":"auto","cache_control":{"type":"ephemeral"},"container":"c","some_future_field":[1,2]`), want(nil), false},
		{"thinking_enabled", body(`"thinking":{"type":"enabled","budget_tokens":32}`), want(func(r *request.Request) {
			r.TemplateKwargs = map[string]any{"enable_thinking": true}
		}), false},
		{"thinking_adaptive", body(`"thinking":{"type":"adaptive","display":"summarized"}`), want(func(r *request.Request) {
			r.TemplateKwargs = map[string]any{"enable_thinking": true}
		}), false},
		{"thinking_disabled", body(`"thinking":{"type":"disabled"}`), want(func(r *request.Request) {
			r.TemplateKwargs = map[string]any{"enable_thinking": false}
		}), false},
		{"output_schema", body(`"output_config":{"effort":"low","format":{"type":"json_schema","schema":{"type":"object"}}}`), want(func(r *request.Request) {
			r.JSONSchema = json.RawMessage(`{"type":"object"}`)
		}), false},
		{"tools_and_choices", body(`"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}},"cache_control":{"type":"ephemeral"}},{"type":"custom","name":"noop","input_schema":{}}],"tool_choice":{"type":"tool","name":"noop","disable_parallel_tool_use":true}`), want(func(r *request.Request) {
			r.Tools = []request.Tool{
				{Name: "get_weather", Description: "Weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
				{Name: "noop", Parameters: json.RawMessage(`{}`)},
			}
			r.ToolChoice = request.ToolChoice{Mode: "function", Name: "noop"}
		}), false},
		{"tool_choice_any", body(`"tools":[{"name":"t","input_schema":{}}],"tool_choice":{"type":"any"}`), want(func(r *request.Request) {
			r.Tools = []request.Tool{{Name: "t", Parameters: json.RawMessage(`{}`)}}
			r.ToolChoice = request.ToolChoice{Mode: "required"}
		}), false},
		{"tool_choice_auto", body(`"tools":[{"name":"t","input_schema":{}}],"tool_choice":{"type":"auto"}`), want(func(r *request.Request) {
			r.Tools = []request.Tool{{Name: "t", Parameters: json.RawMessage(`{}`)}}
			r.ToolChoice = request.ToolChoice{Mode: "auto"}
		}), false},
		{"tool_choice_none", body(`"tools":[{"name":"t","input_schema":{}}],"tool_choice":{"type":"none"}`), want(func(r *request.Request) {
			r.Tools = []request.Tool{{Name: "t", Parameters: json.RawMessage(`{}`)}}
			r.ToolChoice = request.ToolChoice{Mode: "none"}
		}), false},
		{"tool_round_trip", `{"model":"m","max_tokens":64,"messages":[
			{"role":"user","content":[{"type":"text","text":"weather?"}]},
			{"role":"assistant","content":[{"type":"thinking","thinking":"need a tool","signature":"abc"},{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{ "city" : "Paris" }},{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"18C"},{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"noon"}],"is_error":false},{"type":"tool_result","tool_use_id":"toolu_9"},{"type":"text","text":"and so?"}]}]}`,
			want(func(r *request.Request) {
				r.Messages = []request.Message{
					user("weather?"),
					{Role: request.RoleAssistant, Content: "Checking.", ReasoningContent: "need a tool", ToolCalls: []request.ToolCall{
						{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
						{ID: "toolu_2", Name: "get_time", Arguments: `{}`},
					}},
					{Role: request.RoleTool, ToolCallID: "toolu_1", Name: "get_weather", Content: "18C"},
					{Role: request.RoleTool, ToolCallID: "toolu_2", Name: "get_time", Content: "noon"},
					{Role: request.RoleTool, ToolCallID: "toolu_9"},
					user("and so?"),
				}
			}), false},
		{"text_blocks_join", `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":"ok"},{"role":"user","content":[]}]}`,
			want(func(r *request.Request) {
				r.Sampling.MaxTokens = 8
				r.Messages = []request.Message{user("a\nb"), {Role: request.RoleAssistant, Content: "ok"}, user("")}
			}), false},
		{"system_role_message", `{"model":"m","max_tokens":64,"messages":[{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"user","content":"hi"}]}`,
			want(func(r *request.Request) {
				r.Messages = []request.Message{{Role: request.RoleSystem, Content: "s"}, user("hi")}
			}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := DecodeMessagesRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.Request, tt.want) {
				t.Fatalf("request\n got %+v\nwant %+v", d.Request, tt.want)
			}
			if d.Stream != tt.stream {
				t.Fatalf("stream %v, want %v", d.Stream, tt.stream)
			}
		})
	}
}

func TestDecodeMessagesRequestRefusals(t *testing.T) {
	msgs := func(m string) string { return `{"model":"m","max_tokens":64,"messages":[` + m + `]}` }
	tests := []struct {
		name, body, param, inMessage string
	}{
		{"empty_body", ``, "", "empty"},
		{"not_json", `{"model":`, "", "not valid JSON"},
		{"not_object", `[1]`, "", "JSON object"},
		{"missing_max_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens", "max_tokens is required"},
		{"zero_max_tokens", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens", "between 1"},
		{"huge_max_tokens", `{"model":"m","max_tokens":99999999999,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens", "between 1"},
		{"max_tokens_string", `{"model":"m","max_tokens":"64","messages":[{"role":"user","content":"hi"}]}`, "max_tokens", "must be an integer"},
		{"max_tokens_fraction", `{"model":"m","max_tokens":6.5,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens", "max_tokens"},
		{"missing_model", `{"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, "model", "model is required"},
		{"model_number", `{"model":7,"max_tokens":64,"messages":[]}`, "model", "must be a string"},
		{"missing_messages", `{"model":"m","max_tokens":64}`, "messages", "messages is required"},
		{"empty_messages", `{"model":"m","max_tokens":64,"messages":[]}`, "messages", "at least one"},
		{"messages_object", `{"model":"m","max_tokens":64,"messages":{}}`, "messages", "must be an array"},
		{"bad_role", msgs(`{"role":"robot","content":"x"}`), "messages[0].role", `"robot"`},
		{"no_role", msgs(`{"content":"x"}`), "messages[0].role", "required"},
		{"no_content", msgs(`{"role":"user"}`), "messages[0].content", "required"},
		{"content_number", msgs(`{"role":"user","content":5}`), "messages[0].content", "string or an array"},
		{"image_block", msgs(`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}`), "messages[0].content[0]", "text models"},
		{"document_block", msgs(`{"role":"user","content":[{"type":"document","source":{}}]}`), "messages[0].content[0]", "text models"},
		{"image_in_tool_result", msgs(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{}}]}]}`), "messages[0].content[0].content[0]", "text models"},
		{"unknown_block", msgs(`{"role":"user","content":[{"type":"hologram"}]}`), "messages[0].content[0]", `"hologram"`},
		{"untyped_block", msgs(`{"role":"user","content":[{"text":"x"}]}`), "messages[0].content[0]", "no type"},
		{"text_without_text", msgs(`{"role":"user","content":[{"type":"text"}]}`), "messages[0].content[0].text", "without text"},
		{"text_number", msgs(`{"role":"user","content":[{"type":"text","text":3}]}`), "messages[0].content", "must be a string"},
		{"tool_use_in_user", msgs(`{"role":"user","content":[{"type":"tool_use","id":"a","name":"b","input":{}}]}`), "messages[0].content[0]", "tool_result blocks in user"},
		{"tool_result_in_assistant", msgs(`{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"a"}]},{"role":"user","content":"x"}`), "messages[1].content[0]", "tool_use blocks in assistant"},
		{"tool_use_without_id", msgs(`{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","name":"b","input":{}}]},{"role":"user","content":"x"}`), "messages[1].content[0].id", "required"},
		{"tool_use_without_name", msgs(`{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"a","input":{}}]},{"role":"user","content":"x"}`), "messages[1].content[0].name", "required"},
		{"tool_use_input_array", msgs(`{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"b","input":[1]}]},{"role":"user","content":"x"}`), "messages[1].content[0].input", "JSON object"},
		{"tool_result_without_id", msgs(`{"role":"user","content":[{"type":"tool_result","content":"x"}]}`), "messages[0].content[0].tool_use_id", "required"},
		{"thinking_without_text", msgs(`{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking"}]},{"role":"user","content":"x"}`), "messages[1].content[0].thinking", "without thinking"},
		{"prefill", msgs(`{"role":"user","content":"q"},{"role":"assistant","content":"The answer is"}`), "messages[1].role", "prefill"},
		{"system_image", body(`"system":[{"type":"image","source":{}}]`), "system[0]", "text models"},
		{"system_number", body(`"system":1`), "system", "string or an array"},
		{"temperature_high", body(`"temperature":1.5`), "temperature", "between 0 and 1"},
		{"temperature_string", body(`"temperature":"warm"`), "temperature", "must be a number"},
		{"top_p_negative", body(`"top_p":-0.1`), "top_p", "between 0 and 1"},
		{"top_k_negative", body(`"top_k":-1`), "top_k", "top_k"},
		{"stop_sequences_string", body(`"stop_sequences":"END"`), "stop_sequences", "must be an array"},
		{"stop_sequences_empty_one", body(`"stop_sequences":["a",""]`), "stop_sequences", "stop_sequences[1] is empty"},
		{"stop_sequences_too_many", body(`"stop_sequences":["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]`), "stop_sequences", "at most 16"},
		{"stream_string", body(`"stream":"yes"`), "stream", "must be a boolean"},
		{"metadata_wrong_type", body(`"metadata":{"user_id":5}`), "metadata.user_id", "must be a string"},
		{"server_tool", body(`"tools":[{"type":"web_search_20250305","name":"web_search"}]`), "tools[0].type", "server tool"},
		{"tool_without_name", body(`"tools":[{"input_schema":{}}]`), "tools[0].name", "required"},
		{"tool_twice", body(`"tools":[{"name":"a","input_schema":{}},{"name":"a","input_schema":{}}]`), "tools[1].name", "second time"},
		{"tool_without_schema", body(`"tools":[{"name":"a"}]`), "tools[0].input_schema", "required"},
		{"tool_schema_string", body(`"tools":[{"name":"a","input_schema":"object"}]`), "tools[0].input_schema", "JSON Schema object"},
		{"tool_choice_string", body(`"tool_choice":"auto"`), "tool_choice", "must be an object"},
		{"tool_choice_unknown", body(`"tool_choice":{"type":"required"}`), "tool_choice.type", `"required"`},
		{"tool_choice_any_without_tools", body(`"tool_choice":{"type":"any"}`), "tool_choice", "needs tools"},
		{"tool_choice_tool_without_name", body(`"tools":[{"name":"a","input_schema":{}}],"tool_choice":{"type":"tool"}`), "tool_choice.name", "needs a name"},
		{"tool_choice_tool_not_offered", body(`"tools":[{"name":"a","input_schema":{}}],"tool_choice":{"type":"tool","name":"b"}`), "tool_choice.name", `"b"`},
		{"thinking_without_budget", body(`"thinking":{"type":"enabled"}`), "thinking.budget_tokens", "required"},
		{"thinking_budget_zero", body(`"thinking":{"type":"enabled","budget_tokens":0}`), "thinking.budget_tokens", "positive"},
		{"thinking_budget_over_max", body(`"thinking":{"type":"enabled","budget_tokens":64}`), "thinking.budget_tokens", "less than max_tokens"},
		{"thinking_unknown", body(`"thinking":{"type":"deep"}`), "thinking.type", `"deep"`},
		{"thinking_bool", body(`"thinking":true`), "thinking", "must be an object"},
		{"output_format_text", body(`"output_config":{"format":{"type":"text"}}`), "output_config.format.type", "json_schema"},
		{"output_format_no_schema", body(`"output_config":{"format":{"type":"json_schema"}}`), "output_config.format.schema", "JSON Schema object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeMessagesRequest([]byte(tt.body))
			checkInvalid(t, err, tt.param, tt.inMessage)
		})
	}
}

func checkInvalid(t *testing.T, err error, param, inMessage string) {
	t.Helper()
	var e *fault.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *fault.Error", err, err)
	}
	if e.Class != fault.ClassInvalid {
		t.Errorf("class %q, want invalid_request", e.Class)
	}
	if e.Param != param {
		t.Errorf("param %q, want %q (message %q)", e.Param, param, e.Message)
	}
	if !strings.Contains(e.Message, inMessage) {
		t.Errorf("message %q does not contain %q", e.Message, inMessage)
	}
}

func TestDecodeCountTokensRequest(t *testing.T) {
	req, err := DecodeCountTokensRequest([]byte(`{"model":"m","system":"s","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"t","input_schema":{}}],"thinking":{"type":"enabled","budget_tokens":2048}}`))
	if err != nil {
		t.Fatal(err)
	}
	wantReq := request.Request{
		Model: "m", Chat: true, CountOnly: true,
		Messages:       []request.Message{{Role: request.RoleSystem, Content: "s"}, user("hi")},
		Tools:          []request.Tool{{Name: "t", Parameters: json.RawMessage(`{}`)}},
		TemplateKwargs: map[string]any{"enable_thinking": true},
	}
	if !reflect.DeepEqual(req, wantReq) {
		t.Fatalf("got %+v\nwant %+v", req, wantReq)
	}
	// Generation settings are not part of the endpoint: ignored, even
	// when they would be refused on /v1/messages.
	req, err = DecodeCountTokensRequest([]byte(`{"model":"m","max_tokens":0,"temperature":7,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil || !req.CountOnly || !reflect.DeepEqual(req.Sampling, request.Sampling{}) {
		t.Fatalf("%+v %v", req, err)
	}
	for _, tt := range []struct{ name, body, param, inMessage string }{
		{"missing_model", `{"messages":[{"role":"user","content":"hi"}]}`, "model", "required"},
		{"image", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`, "messages[0].content[0]", "text models"},
		{"bad_tool_choice", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"tool","name":"x"}}`, "tool_choice.name", "not among"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeCountTokensRequest([]byte(tt.body))
			checkInvalid(t, err, tt.param, tt.inMessage)
		})
	}
}

// FuzzDecodeMessagesRequest checks that no body panics the decoder, that
// every failure is a classified invalid_request error, and that every
// success is a request infer accepts.
func FuzzDecodeMessagesRequest(f *testing.F) {
	for _, seed := range []string{
		body(""),
		body(`"stream":true,"system":[{"type":"text","text":"s"}],"temperature":0.2,"top_k":3,"stop_sequences":["x"]`),
		body(`"tools":[{"name":"t","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"t"}`),
		body(`"thinking":{"type":"enabled","budget_tokens":8}`),
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"tool_use","id":"a","name":"b","input":{"x":[1,{"y":null}]}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"r"}]}]}]}`,
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image"}]}]}`,
		`{"model":"m","messages":null}`,
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":null}]}`,
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[null]}]}`,
		`{"model":"m","max_tokens":1,"system":[],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":7}]}]}`,
		`null`, `[]`, `"x"`, `{}`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, decode := range []func([]byte) (request.Request, error){
			func(b []byte) (request.Request, error) { d, err := DecodeMessagesRequest(b); return d.Request, err },
			DecodeCountTokensRequest,
		} {
			req, err := decode(b)
			if err != nil {
				var e *fault.Error
				if !errors.As(err, &e) || e.Class != fault.ClassInvalid || e.Message == "" {
					t.Fatalf("error %v (%T) is not a classified invalid_request error", err, err)
				}
				continue
			}
			if verr := req.Validate(); verr != nil {
				t.Fatalf("decoded request fails validation: %v", verr)
			}
			if !req.Chat || req.Model == "" || len(req.Messages) == 0 {
				t.Fatalf("decoded request is not a chat request: %+v", req)
			}
			for _, m := range req.Messages {
				for _, tc := range m.ToolCalls {
					if !json.Valid([]byte(tc.Arguments)) {
						t.Fatalf("tool call arguments %q are not JSON", tc.Arguments)
					}
				}
			}
		}
	})
}
