package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/output"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

// What gpt-oss writes after the prompt's <|start|>assistant, as the
// tokenizer renders it (<|call|> and <|return|> end generation and are not
// in the text): an analysis message, then a call or a final answer.
const (
	harmonyCallText = "<|channel|>analysis<|message|>The user wants the weather in Oslo; call get_weather.<|end|>" +
		"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\": \"Oslo\"}"
	harmonyFinalText = "<|channel|>analysis<|message|>The tool says 21 degrees.<|end|>" +
		"<|start|>assistant<|channel|>final<|message|>It is 21 °C in Oslo."
)

// harmonyScript is the gpt-oss test model: it runs harmony text through the
// runner's output parser in 5-byte pieces and turns the events into chunks
// as the runner's streamer does. It calls the first offered tool unless the
// conversation ends with a tool result.
func harmonyScript(req request.Request) []request.Chunk {
	cfg := output.Config{Dialect: output.Harmony}
	for _, t := range req.Tools {
		cfg.OfferedTools = append(cfg.OfferedTools, t.Name)
	}
	text := harmonyFinalText
	if len(req.Tools) > 0 && req.Messages[len(req.Messages)-1].Role != request.RoleTool {
		text = harmonyCallText
	}
	p, err := output.NewParser(cfg)
	if err != nil {
		return []request.Chunk{{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassInternal, "%v", err)}}
	}
	var evs []output.Event
	for i := 0; i < len(text); i += 5 {
		evs = append(evs, p.Push(text[i:min(i+5, len(text))])...)
	}
	evs = append(evs, p.Close()...)
	var out []request.Chunk
	finish := request.FinishStop
	for _, ev := range output.Coalesce(evs) {
		switch ev.Kind {
		case output.Content:
			out = append(out, request.Chunk{Kind: request.ChunkDelta, Content: ev.Text})
		case output.Reasoning:
			out = append(out, request.Chunk{Kind: request.ChunkDelta, Reasoning: ev.Text})
		case output.Call:
			c := ev.ToolCall
			out = append(out, request.Chunk{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}})
			finish = request.FinishToolCalls
		}
	}
	return append(out, request.Chunk{Kind: request.ChunkDone, FinishReason: finish, Usage: &request.Usage{PromptTokens: 9, CompletionTokens: 20}})
}

// TestHarmonyEveryAPI checks that a gpt-oss (harmony) generation comes out
// of every wire format as reasoning, content and a tool call, that each
// API's reasoning effort reaches the template as reasoning_effort, and that
// the reasoning sent back with the call reaches the backend.
func TestHarmonyEveryAPI(t *testing.T) {
	f := newFixture(t, Config{})
	const reasoningCall = "The user wants the weather in Oslo; call get_weather."
	const reasoningFinal = "The tool says 21 degrees."
	const answer = "It is 21 °C in Oslo."
	tests := []struct {
		name, path, body string
		want             []string       // substrings of the response body, in order
		kwargs           map[string]any // the template variables the backend got
	}{
		{"openai_call", "/v1/chat/completions",
			`{"model":"gpt-oss","reasoning_effort":"high","messages":[{"role":"user","content":"Weather in Oslo?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`,
			[]string{`"content":null`, `"reasoning_content":"` + reasoningCall + `"`, `"tool_calls":[{"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Oslo\"}"}}]`, `"finish_reason":"tool_calls"`},
			map[string]any{"reasoning_effort": "high"}},
		{"openai_final", "/v1/chat/completions",
			`{"model":"gpt-oss","messages":[{"role":"user","content":"Weather in Oslo?"},
			{"role":"assistant","content":null,"reasoning_content":"` + reasoningCall + `","tool_calls":[{"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Oslo\"}"}}]},
			{"role":"tool","tool_call_id":"call_0","content":"21"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`,
			[]string{`"content":"` + answer + `"`, `"reasoning_content":"` + reasoningFinal + `"`, `"finish_reason":"stop"`}, nil},
		{"openai_stream", "/v1/chat/completions",
			`{"model":"gpt-oss","stream":true,"messages":[{"role":"user","content":"Weather in Oslo?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`,
			[]string{`"reasoning_content":"` + reasoningCall + `"`, `"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Oslo\"}"}}]`, `"finish_reason":"tool_calls"`, `[DONE]`}, nil},
		{"responses_call", "/v1/responses",
			`{"model":"gpt-oss","input":"Weather in Oslo?","reasoning":{"effort":"low"},"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`,
			[]string{`"type":"reasoning"`, `"text":"` + reasoningCall + `"`, `"type":"function_call"`, `"name":"get_weather"`, `"arguments":"{\"location\":\"Oslo\"}"`},
			map[string]any{"enable_thinking": true, "reasoning_effort": "low"}},
		{"anthropic_call", "/v1/messages",
			`{"model":"gpt-oss","max_tokens":256,"thinking":{"type":"enabled","budget_tokens":64},"messages":[{"role":"user","content":"Weather in Oslo?"}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`,
			[]string{`{"type":"thinking","thinking":"` + reasoningCall + `"`, `{"type":"tool_use","id":"toolu_test_0","name":"get_weather","input":{"location":"Oslo"}}`, `"stop_reason":"tool_use"`}, nil},
		{"anthropic_final", "/v1/messages",
			`{"model":"gpt-oss","max_tokens":256,"messages":[{"role":"user","content":"Weather in Oslo?"}]}`,
			[]string{`{"type":"thinking","thinking":"` + reasoningFinal + `"`, `{"type":"text","text":"` + answer + `"}`, `"stop_reason":"end_turn"`}, nil},
		{"ollama_call", "/api/chat",
			`{"model":"gpt-oss","stream":false,"think":"medium","messages":[{"role":"user","content":"Weather in Oslo?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`,
			[]string{`"thinking":"` + reasoningCall + `"`, `"tool_calls":[{"id":"call_0","function":{"index":0,"name":"get_weather","arguments":{"location":"Oslo"}}}]`},
			map[string]any{"enable_thinking": true, "reasoning_effort": "medium"}},
		{"ollama_final", "/api/chat",
			`{"model":"gpt-oss","stream":false,"think":true,"messages":[{"role":"user","content":"Weather in Oslo?"}]}`,
			[]string{`"content":"` + answer + `"`, `"thinking":"` + reasoningFinal + `"`, `"done_reason":"stop"`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, "POST", tt.path, tt.body)
			body := string(r.body)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, body)
			}
			if strings.Contains(body, "<|") {
				t.Errorf("harmony markup reached the client: %s", body)
			}
			at := 0
			for _, w := range tt.want {
				i := strings.Index(body[at:], w)
				if i < 0 {
					t.Fatalf("body lacks %s (after byte %d):\n%s", w, at, body)
				}
				at += i + len(w)
			}
			if tt.kwargs != nil {
				if got := f.lastRequest().TemplateKwargs; !reflect.DeepEqual(got, tt.kwargs) {
					t.Errorf("template kwargs %v, want %v", got, tt.kwargs)
				}
			}
		})
	}
	// The last OpenAI round trip sent the call's reasoning back: the backend
	// (the runner renders it into the template as "thinking") received it.
	r := f.do(t, "POST", "/v1/chat/completions", tests[1].body)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	msgs := f.lastRequest().Messages
	want := request.Message{Role: request.RoleAssistant, ReasoningContent: reasoningCall,
		ToolCalls: []request.ToolCall{{ID: "call_0", Name: "get_weather", Arguments: `{"location":"Oslo"}`}}}
	if len(msgs) != 3 || !reflect.DeepEqual(msgs[1], want) {
		got, _ := json.Marshal(msgs)
		t.Fatalf("backend messages %s, want the assistant turn %+v", got, want)
	}
}
