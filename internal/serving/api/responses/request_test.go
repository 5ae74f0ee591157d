package responses

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

// decode runs DecodeRequest and Continue with no history.
func decode(body string) (request.Request, Decoded, error) {
	d, err := DecodeRequest([]byte(body))
	if err != nil {
		return request.Request{}, d, err
	}
	req, err := Continue(nil, d)
	return req, d, err
}

func TestDecodeRequest(t *testing.T) {
	user := func(s string) request.Message { return request.Message{Role: request.RoleUser, Content: s} }
	tests := []struct {
		name string
		body string
		want request.Request
		// check looks at the decoded transport and echo fields.
		check func(t *testing.T, d Decoded)
	}{
		{
			name: "string_input",
			body: `{"model":"m","input":"hi"}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{user("hi")}},
			check: func(t *testing.T, d Decoded) {
				if d.Stream || !d.Store || d.PreviousResponseID != "" {
					t.Errorf("stream %v store %v previous %q; want false, true, empty", d.Stream, d.Store, d.PreviousResponseID)
				}
				if d.Echo.ToolChoice != "auto" || !d.Echo.ParallelToolCalls || d.Echo.Text.Format.Type != "text" || len(d.Echo.Tools) != 0 {
					t.Errorf("echo defaults %+v", d.Echo)
				}
			},
		},
		{
			name: "instructions_become_system_message",
			body: `{"model":"m","input":"hi","instructions":"be brief"}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{{Role: request.RoleSystem, Content: "be brief"}, user("hi")}},
		},
		{
			name: "message_items_with_parts",
			body: `{"model":"m","input":[
				{"role":"developer","content":"rules"},
				{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},
				{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"c","annotations":[]}]},
				{"role":"system","content":"sys"},
				{"role":"user","content":[{"type":"input_text","text":"d"}],"extra":true}]}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{
				{Role: request.RoleSystem, Content: "rules"}, user("a\nb"), {Role: request.RoleAssistant, Content: "c"},
				{Role: request.RoleSystem, Content: "sys"}, user("d")}},
		},
		{
			name: "function_call_round_trip_and_reasoning",
			body: `{"model":"m","input":[
				{"role":"user","content":"weather?"},
				{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"need a tool"}]},
				{"type":"function_call","id":"fc_1","call_id":"call_a","name":"get","arguments":"{\"city\":\"Oslo\"}","status":"completed"},
				{"type":"function_call","call_id":"call_b","name":"get","arguments":{"city": "Rome"}},
				{"type":"function_call_output","call_id":"call_a","output":"cold"},
				{"type":"function_call_output","call_id":"call_b","output":[{"type":"input_text","text":"warm"}]}]}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{
				user("weather?"),
				{Role: request.RoleAssistant, ReasoningContent: "need a tool", ToolCalls: []request.ToolCall{
					{ID: "call_a", Name: "get", Arguments: `{"city":"Oslo"}`}, {ID: "call_b", Name: "get", Arguments: `{"city":"Rome"}`}}},
				{Role: request.RoleTool, ToolCallID: "call_a", Name: "get", Content: "cold"},
				{Role: request.RoleTool, ToolCallID: "call_b", Name: "get", Content: "warm"}}},
		},
		{
			name: "reasoning_summary_attaches_to_assistant_message",
			body: `{"model":"m","input":[{"role":"user","content":"q"},
				{"type":"reasoning","summary":[{"type":"summary_text","text":"thought"}]},
				{"role":"assistant","content":"a"},{"role":"user","content":"q2"}]}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{
				user("q"), {Role: request.RoleAssistant, Content: "a", ReasoningContent: "thought"}, user("q2")}},
		},
		{
			name: "sampling_tools_and_format",
			body: `{"model":"m","input":"hi","max_output_tokens":7,"temperature":0.5,"top_p":0.9,
				"tools":[{"type":"function","name":"get","description":"gets","parameters":{"type":"object"},"strict":true},
				         {"type":"function","name":"put","parameters":null,"strict":null}],
				"tool_choice":{"type":"function","name":"put"},
				"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true},"verbosity":"low"},
				"include":["message.output_text.logprobs"],"top_logprobs":2,"stream":true,"store":false,
				"metadata":{"k":"v"},"user":"u1","parallel_tool_calls":false,"truncation":"disabled",
				"service_tier":"auto","prompt_cache_key":"x","safety_identifier":"s","stream_options":{"include_obfuscation":false},
				"unknown_field":{"any":1}}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{user("hi")},
				Tools: []request.Tool{
					{Name: "get", Description: "gets", Parameters: json.RawMessage(`{"type":"object"}`)},
					{Name: "put"}},
				ToolChoice: request.ToolChoice{Mode: "function", Name: "put"},
				Sampling:   request.Sampling{MaxTokens: 7, Temperature: ptr(0.5), TopP: ptr(0.9), Logprobs: true, TopLogprobs: 2},
				JSONSchema: json.RawMessage(`{"type":"object"}`)},
			check: func(t *testing.T, d Decoded) {
				if !d.Stream || d.Store {
					t.Errorf("stream %v store %v; want true, false", d.Stream, d.Store)
				}
				e := d.Echo
				if e.ParallelToolCalls || e.User != "u1" || e.Metadata["k"] != "v" || *e.MaxOutputTokens != 7 {
					t.Errorf("echo %+v", e)
				}
				if e.ToolChoice != (ToolChoiceFunction{Type: "function", Name: "put"}) {
					t.Errorf("echo tool_choice %#v", e.ToolChoice)
				}
				if len(e.Tools) != 2 || !*e.Tools[0].Strict || e.Tools[1].Strict != nil || *e.Tools[0].Description != "gets" {
					t.Errorf("echo tools %+v", e.Tools)
				}
				if f := e.Text.Format; f.Type != "json_schema" || f.Name != "out" || *e.Text.Verbosity != "low" {
					t.Errorf("echo text %+v", e.Text)
				}
			},
		},
		{
			name: "json_object_and_required",
			body: `{"model":"m","input":"hi","text":{"format":{"type":"json_object"}},
				"tools":[{"type":"function","name":"get"}],"tool_choice":"required"}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{user("hi")},
				Tools: []request.Tool{{Name: "get"}}, ToolChoice: request.ToolChoice{Mode: "required"}, JSONSchema: json.RawMessage(`{}`)},
		},
		{
			name: "tool_choice_none_and_text_format",
			body: `{"model":"m","input":"hi","tools":[{"type":"function","name":"get"}],"tool_choice":"none","text":{"format":{"type":"text"}}}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{user("hi")},
				Tools: []request.Tool{{Name: "get"}}, ToolChoice: request.ToolChoice{Mode: "none"}},
		},
		{
			name: "reasoning_effort_enables_thinking",
			body: `{"model":"m","input":"hi","reasoning":{"effort":"high","summary":"auto"}}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{user("hi")}, TemplateKwargs: map[string]any{"enable_thinking": true, "reasoning_effort": "high"}},
			check: func(t *testing.T, d Decoded) {
				if *d.Echo.Reasoning.Effort != "high" || *d.Echo.Reasoning.Summary != "auto" {
					t.Errorf("echo reasoning %+v", d.Echo.Reasoning)
				}
			},
		},
		{
			name: "reasoning_effort_none_disables_thinking",
			body: `{"model":"m","input":"hi","reasoning":{"effort":"none"}}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{user("hi")}, TemplateKwargs: map[string]any{"enable_thinking": false}},
		},
		{
			name: "reasoning_without_effort_keeps_the_default",
			body: `{"model":"m","input":"hi","reasoning":{"summary":"auto","effort":null}}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{user("hi")}},
		},
		{
			name: "previous_response_id",
			body: `{"model":"m","input":"more","previous_response_id":"resp_1","background":false,"conversation":null}`,
			want: request.Request{Model: "m", Chat: true, Messages: []request.Message{user("more")}},
			check: func(t *testing.T, d Decoded) {
				if d.PreviousResponseID != "resp_1" {
					t.Errorf("previous_response_id %q", d.PreviousResponseID)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, d, err := decode(tt.body)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				gb, _ := json.Marshal(got)
				wb, _ := json.Marshal(tt.want)
				t.Errorf("request\n got %s\nwant %s", gb, wb)
			}
			if tt.check != nil {
				tt.check(t, d)
			}
		})
	}
}

func TestDecodeRequestRefusals(t *testing.T) {
	tests := []struct {
		name, body, param, inMessage string
	}{
		{"empty_body", ``, "", "empty"},
		{"not_json", `{"model":`, "", "not valid JSON"},
		{"not_an_object", `[1]`, "", "must be a JSON object"},
		{"no_model", `{"input":"hi"}`, "model", "model is required"},
		{"no_input", `{"model":"m"}`, "input", "input is required"},
		{"empty_input_list", `{"model":"m","input":[]}`, "input", "input is required"},
		{"input_wrong_type", `{"model":"m","input":5}`, "input", "string or an array"},
		{"item_not_object", `{"model":"m","input":["hi"]}`, "input[0]", "input item object"},
		{"item_field_wrong_type", `{"model":"m","input":[{"role":5,"content":"hi"}]}`, "input[0].role", "must be a string"},
		{"model_wrong_type", `{"model":5,"input":"hi"}`, "model", "must be a string"},
		{"temperature_wrong_type", `{"model":"m","input":"hi","temperature":"hot"}`, "temperature", "must be a number"},
		{"stream_wrong_type", `{"model":"m","input":"hi","stream":"yes"}`, "stream", "must be a boolean"},
		{"metadata_wrong_type", `{"model":"m","input":"hi","metadata":{"k":1}}`, "metadata", "must be a string"},
		{"tools_wrong_type", `{"model":"m","input":"hi","tools":{}}`, "tools", "must be an array"},
		{"max_output_tokens_zero", `{"model":"m","input":"hi","max_output_tokens":0}`, "max_output_tokens", "between 1 and"},
		{"max_output_tokens_huge", `{"model":"m","input":"hi","max_output_tokens":99999999999}`, "max_output_tokens", "between 1 and"},
		{"max_output_tokens_fraction", `{"model":"m","input":"hi","max_output_tokens":1.5}`, "max_output_tokens", "integer"},
		{"temperature_range", `{"model":"m","input":"hi","temperature":3}`, "temperature", "between 0 and 2"},
		{"top_p_range", `{"model":"m","input":"hi","top_p":1.5}`, "top_p", "between 0 and 1"},
		{"top_logprobs_range", `{"model":"m","input":"hi","top_logprobs":21}`, "top_logprobs", "between 0 and 20"},
		{"role_unknown", `{"model":"m","input":[{"role":"wizard","content":"hi"}]}`, "input[0].role", "wizard"},
		{"role_missing", `{"model":"m","input":[{"content":"hi"}]}`, "input[0].role", "required"},
		{"content_missing", `{"model":"m","input":[{"role":"user"}]}`, "input[0].content", "required"},
		{"content_image", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, "input[0].content", "text parts only"},
		{"content_unknown_part", `{"model":"m","input":[{"role":"user","content":[{"type":"video"}]}]}`, "input[0].content", "unknown content part"},
		{"content_part_without_text", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text"}]}]}`, "input[0].content", "without text"},
		{"item_type_unknown", `{"model":"m","input":[{"type":"web_search_call","id":"x"}]}`, "input[0].type", "web_search_call"},
		{"item_reference", `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].type", "item_reference"},
		{"function_call_without_call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id", "required"},
		{"function_call_without_name", `{"model":"m","input":[{"type":"function_call","call_id":"c","arguments":"{}"}]}`, "input[0].name", "required"},
		{"function_call_bad_arguments", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":[1]}]}`, "input[0].arguments", "JSON object"},
		{"output_without_call_id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id", "required"},
		{"output_without_output", `{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`, "input[0].output", "required"},
		{"output_answers_no_call", `{"model":"m","input":[{"role":"user","content":"q"},{"type":"function_call_output","call_id":"call_x","output":"x"}]}`, "input", `"call_x"`},
		{"hosted_tool", `{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`, "tools[0].type", "hosted"},
		{"tool_without_name", `{"model":"m","input":"hi","tools":[{"type":"function"}]}`, "tools[0].name", "required"},
		{"tool_named_twice", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]}`, "tools[1].name", "second time"},
		{"tool_parameters_not_object", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":[1]}]}`, "tools[0].parameters", "JSON Schema object"},
		{"tool_choice_unknown", `{"model":"m","input":"hi","tool_choice":"always"}`, "tool_choice", "always"},
		{"tool_choice_bad_object", `{"model":"m","input":"hi","tool_choice":{"type":"file_search"}}`, "tool_choice", "type"},
		{"tool_choice_required_without_tools", `{"model":"m","input":"hi","tool_choice":"required"}`, "tool_choice", "needs tools"},
		{"tool_choice_unknown_function", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}}`, "tool_choice", `"g"`},
		{"text_format_unknown", `{"model":"m","input":"hi","text":{"format":{"type":"yaml"}}}`, "text.format.type", "yaml"},
		{"text_schema_not_object", `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":"s"}}}`, "text.format.schema", "JSON Schema object"},
		{"reasoning_effort_unknown", `{"model":"m","input":"hi","reasoning":{"effort":"extreme"}}`, "reasoning.effort", "extreme"},
		{"background", `{"model":"m","input":"hi","background":true}`, "background", "not supported"},
		{"conversation", `{"model":"m","input":"hi","conversation":"conv_1"}`, "conversation", "previous_response_id"},
		{"prompt_template", `{"model":"m","input":"hi","prompt":{"id":"pmpt_1"}}`, "prompt", "not supported"},
		{"logit_bias", `{"model":"m","input":"hi","logit_bias":{"1":2}}`, "logit_bias", "not supported"},
		{"truncation_unknown", `{"model":"m","input":"hi","truncation":"middle"}`, "truncation", "middle"},
		{"previous_response_id_empty", `{"model":"m","input":"hi","previous_response_id":""}`, "previous_response_id", "empty"},
		{"previous_response_id_wrong_type", `{"model":"m","input":"hi","previous_response_id":7}`, "previous_response_id", "must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := decode(tt.body)
			checkInvalid(t, err, tt.param, tt.inMessage)
		})
	}
}

// checkInvalid checks that err is an invalid-request *fault.Error naming
// param and saying inMessage.
func checkInvalid(t *testing.T, err error, param, inMessage string) {
	t.Helper()
	if err == nil {
		t.Fatal("decoded; want an error")
	}
	e, ok := errors.AsType[*fault.Error](err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *fault.Error", err, err)
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

func TestContinue(t *testing.T) {
	history := []request.Message{
		{Role: request.RoleUser, Content: "weather?"},
		{Role: request.RoleAssistant, ToolCalls: []request.ToolCall{{ID: "call_a", Name: "get", Arguments: "{}"}}},
	}
	d, err := DecodeRequest([]byte(`{"model":"m","instructions":"new rules","input":[{"type":"function_call_output","call_id":"call_a","output":"cold"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req, err := Continue(history, d)
	if err != nil {
		t.Fatal(err)
	}
	want := []request.Message{
		{Role: request.RoleSystem, Content: "new rules"}, history[0], history[1],
		{Role: request.RoleTool, ToolCallID: "call_a", Name: "get", Content: "cold"},
	}
	if !reflect.DeepEqual(req.Messages, want) {
		t.Errorf("messages %+v, want %+v", req.Messages, want)
	}
	if d.Input[0].Name != "" {
		t.Errorf("Continue changed the decoded input: %+v", d.Input[0])
	}
	// Without the history the output answers no call.
	_, err = Continue(nil, d)
	checkInvalid(t, err, "input", `"call_a"`)
}

func fuzzDecode(t *testing.T, body []byte) {
	d, err := DecodeRequest(body)
	if err != nil {
		if _, ok := errors.AsType[*fault.Error](err); !ok {
			t.Fatalf("error %v (%T) is not a *fault.Error", err, err)
		}
		return
	}
	req, err := Continue(nil, d)
	if err != nil {
		if e, ok := errors.AsType[*fault.Error](err); !ok || e.Class != fault.ClassInvalid {
			t.Fatalf("Continue error %v is not an invalid-request *fault.Error", err)
		}
		return
	}
	if err := req.Validate(); err != nil {
		t.Fatalf("Continue returned a request that does not validate: %v", err)
	}
	if !req.Chat || len(req.Messages) == 0 || req.Model == "" {
		t.Fatalf("Continue returned %+v", req)
	}
	// The echo must always encode: a Builder's first events marshal.
	b := NewBuilder(Meta{ID: "resp_f", Model: d.Model}, &d)
	for _, ev := range b.Start() {
		if _, err := json.Marshal(ev); err != nil {
			t.Fatalf("event %s does not encode: %v", ev.EventType(), err)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]}],"instructions":"x"}`,
		`{"model":"m","input":[{"role":"user","content":"q"},{"type":"reasoning","content":[{"type":"reasoning_text","text":"r"}]},
			{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object"},"strict":true}],"tool_choice":{"type":"function","name":"f"}}`,
		`{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}},"reasoning":{"effort":"low"}}`,
		`{"model":"m","input":"hi","max_output_tokens":5,"temperature":0.2,"top_p":0.5,"stream":true,"store":false,"previous_response_id":"resp_x"}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"o"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`,
		`{"model":"m","input":"hi","metadata":{"a":"b"},"include":["message.output_text.logprobs"],"top_logprobs":3}`,
		`[]`, `null`, `{"input":null}`, `{"model":"m","input":[null]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(fuzzDecode)
}
