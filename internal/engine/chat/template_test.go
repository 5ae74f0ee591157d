package chat

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func mustParseFile(t *testing.T, name string) *Template {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Parse(string(src))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tpl
}

// conversation returns the messages and tools of one conversation in
// testdata/conversations.json.
func conversation(t *testing.T, id string) (msgs, tools []Object) {
	t.Helper()
	data, err := os.ReadFile("testdata/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	all, err := DecodeObjects(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if got, _ := c.Get("id"); got == id {
			m, _ := c.Get("messages")
			tl, _ := c.Get("tools")
			if msgs, err = objectList(m); err != nil {
				t.Fatal(err)
			}
			if tools, err = objectList(tl); err != nil {
				t.Fatal(err)
			}
			return msgs, tools
		}
	}
	t.Fatalf("no conversation %q", id)
	return nil, nil
}

func TestRaiseExceptionIsTemplateError(t *testing.T) {
	tpl, err := Parse(`{{ raise_exception('no ' ~ 'way') }}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.Render(Input{})
	var te *TemplateError
	if !errors.As(err, &te) || te.Message != "no way" {
		t.Fatalf("got %v, want TemplateError \"no way\"", err)
	}
	var re *RenderError
	if errors.As(err, &re) {
		t.Fatal("a template's own exception must not read as a RenderError")
	}
}

func TestInputErrors(t *testing.T) {
	tpl, err := Parse(`{{ x }}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		in    Input
		check func(error) bool
	}{
		{"kwarg_replaces_messages", Input{Kwargs: map[string]any{"messages": 1}},
			func(err error) bool { return errors.Is(err, ErrReservedKwarg) }},
		{"kwarg_replaces_helper", Input{Kwargs: map[string]any{fnAdd: 1}},
			func(err error) bool { return errors.Is(err, ErrReservedKwarg) }},
		{"unsupported_go_type", Input{Kwargs: map[string]any{"x": make(chan int)}},
			func(err error) bool { var ve *ValueError; return errors.As(err, &ve) && ve.Path == "x" }},
		{"unsupported_nested", Input{Messages: []Object{{{Key: "content", Value: struct{}{}}}}},
			func(err error) bool {
				var ve *ValueError
				return errors.As(err, &ve) && ve.Path == "messages[0].content"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tpl.Render(tt.in); !tt.check(err) {
				t.Fatalf("unexpected error %v", err)
			}
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	v, err := DecodeJSON([]byte(`{"z": 1, "a": [1.0, 2], "m": {"y": null, "b": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := render(t, "{{ v|tojson }}|{% for k in v %}{{ k }}{% endfor %}", map[string]any{"v": v})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"z": 1, "a": [1.0, 2], "m": {"y": null, "b": true}}|zam`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, bad := range []string{``, `{`, `{"a": 1} x`, `[1,]`} {
		if _, err := DecodeJSON([]byte(bad)); err == nil {
			t.Errorf("DecodeJSON(%q) succeeded", bad)
		}
	}
	if _, err := DecodeObjects([]byte(`[1]`)); err == nil {
		t.Error("DecodeObjects accepted a number element")
	}
}

func TestObjectFromMapSorts(t *testing.T) {
	got, err := render(t, "{{ v|tojson }}", map[string]any{"v": map[string]any{"b": 1, "a": []string{"x"}}})
	if err != nil || got != `{"a": ["x"], "b": 1}` {
		t.Fatalf("got %q, %v", got, err)
	}
}

// TestTypedMessages checks that a conversation built with Message renders
// as its JSON form does.
func TestTypedMessages(t *testing.T) {
	msgs, tools := conversation(t, "tool_call_roundtrip")
	typed := []Message{
		{Role: "user", Content: "How warm is it in São Paulo today?"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "a1B2c3D4e", Name: "get_weather",
			Arguments: Object{{Key: "location", Value: "São Paulo, Brasil"}, {Key: "unit", Value: "celsius"}}}}},
		{Role: "tool", ToolCallID: "a1B2c3D4e", Name: "get_weather", Content: `{"temperature": 22, "unit": "celsius", "condition": "sunny"}`},
		{Role: "assistant", Content: "It is 22 °C and sunny in São Paulo."},
	}
	for _, name := range []string{"Qwen-Qwen2.5-7B-Instruct.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja"} {
		tpl := mustParseFile(t, name)
		want, err := tpl.Render(Input{Messages: msgs, Tools: tools, AddGenerationPrompt: true, BOS: "<s>", EOS: "</s>"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := tpl.Render(Input{Messages: Objects(typed), Tools: tools, AddGenerationPrompt: true, BOS: "<s>", EOS: "</s>"})
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: typed messages render\n%q\nJSON messages render\n%q", name, got, want)
		}
	}
}

func TestDetectFamily(t *testing.T) {
	tests := []struct {
		file string
		want Family
	}{
		{"HuggingFaceTB-SmolLM3-3B.jinja", FamilyOther},
		{"Mistral-Small-3.2-24B-Instruct-2506.jinja", FamilyMistral},
		{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", FamilyHermes},
		{"Qwen-QwQ-32B.jinja", FamilyHermes},
		{"Qwen-Qwen2.5-7B-Instruct.jinja", FamilyHermes},
		{"Qwen-Qwen3-0.6B.jinja", FamilyHermes},
		{"Qwen3-Coder.jinja", FamilyQwen3Coder},
		{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", FamilyDeepSeek},
		{"google-gemma-2-2b-it.jinja", FamilyOther},
		{"meta-llama-Llama-3.1-8B-Instruct.jinja", FamilyLlama3},
		{"meta-llama-Llama-3.2-3B-Instruct.jinja", FamilyLlama3},
		{"microsoft-Phi-3.5-mini-instruct.jinja", FamilyOther},
		{"mistralai-Mistral-Nemo-Instruct-2407.jinja", FamilyMistral},
		{"teknium-OpenHermes-2.5-Mistral-7B.jinja", FamilyOther},
		{"moe/openai-gpt-oss-120b.jinja", FamilyHarmony},
		{"moe/deepseek-ai-DeepSeek-V3.1.jinja", FamilyDeepSeek},
		{"moe/GLM-4.6.jinja", FamilyHermes}, // shares <tool_call>; its body is <arg_key>/<arg_value> pairs
		{"moe/moonshotai-Kimi-K2.jinja", FamilyKimi},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			if got := mustParseFile(t, tt.file).Family(); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestOpensThinking(t *testing.T) {
	msgs, _ := conversation(t, "single_user")
	tests := []struct {
		file   string
		kwargs map[string]any
		want   bool
	}{
		{"Qwen-QwQ-32B.jinja", nil, true},
		{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", nil, true},
		{"Qwen-Qwen3-0.6B.jinja", nil, false},
		{"Qwen-Qwen3-0.6B.jinja", map[string]any{"enable_thinking": false}, false},
		{"Qwen-Qwen2.5-7B-Instruct.jinja", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out, err := mustParseFile(t, tt.file).Render(Input{Messages: msgs, AddGenerationPrompt: true, Kwargs: tt.kwargs})
			if err != nil {
				t.Fatal(err)
			}
			if got := OpensThinking(out); got != tt.want {
				t.Fatalf("OpensThinking = %v, want %v, prompt %q", got, tt.want, out)
			}
		})
	}
	for s, want := range map[string]bool{"": false, "<think>": true, "<think>\n</think>\n": false, "<think></think>x<think>\n": true,
		// Mistral's: Ministral 3 Reasoning's default system prompt shows
		// a closed block; a prompt ending in [THINK] opens one.
		"[SYSTEM_PROMPT]…:[THINK]Your thoughts[/THINK]Here[/SYSTEM_PROMPT][INST]hi[/INST]": false, "[INST]hi[/INST][THINK]": true} {
		if got := OpensThinking(s); got != want {
			t.Errorf("OpensThinking(%q) = %v", s, got)
		}
	}
}

func TestFallback(t *testing.T) {
	msgs, _ := conversation(t, "tool_call_pending")
	got, err := Fallback().Render(Input{Messages: msgs, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/fallback_tool_call_pending.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

func TestRenderCaseRejectsBadCases(t *testing.T) {
	tests := []struct {
		name string
		json string
	}{
		{"not_json", `{`},
		{"not_object", `[]`},
		{"path_traversal", `{"template": "../x.jinja", "messages": []}`},
		{"no_template", `{"messages": []}`},
		{"messages_not_list", `{"template": "a.jinja", "messages": {}}`},
		{"message_not_object", `{"template": "a.jinja", "messages": [1]}`},
		{"bos_not_string", `{"template": "a.jinja", "messages": [], "bos_token": 1}`},
		{"gen_not_bool", `{"template": "a.jinja", "messages": [], "add_generation_prompt": "yes"}`},
		{"bad_now", `{"template": "a.jinja", "messages": [], "now": "yesterday"}`},
		{"kwargs_not_object", `{"template": "a.jinja", "messages": [], "kwargs": []}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := RenderCase("testdata", []byte(tt.json)); !errors.Is(err, ErrBadCase) {
				t.Fatalf("got %v, want ErrBadCase", err)
			}
		})
	}
	if _, err := RenderCase("testdata", []byte(`{"template": "missing.jinja", "messages": []}`)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing template: got %v", err)
	}
}

// TestConcurrentRender checks a Template renders from many goroutines and
// that renders do not leak state into one another (namespace mutation).
func TestConcurrentRender(t *testing.T) {
	tpl := mustParseFile(t, "Qwen-Qwen3-0.6B.jinja")
	msgs, tools := conversation(t, "tool_call_roundtrip")
	in := Input{Messages: msgs, Tools: tools, AddGenerationPrompt: true, Now: time.Unix(0, 0)}
	want, err := tpl.Render(in)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got, err := tpl.Render(in); err != nil || got != want {
					t.Errorf("concurrent render differs: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}
