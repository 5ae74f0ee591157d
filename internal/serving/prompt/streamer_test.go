package prompt

import (
	"testing"

	"github.com/skulk/skulk/internal/engine/output"
	"github.com/skulk/skulk/internal/serving/request"
)

// TestStreamerParsesChat feeds answer text through the chat path of the
// streamer (stop sequences, then the reasoning and tool-call parser).
func TestStreamerParsesChat(t *testing.T) {
	tests := []struct {
		name      string
		cfg       output.Config
		stop      []string
		pieces    []string
		content   string
		reasoning string
		calls     []request.ToolCall
		madeCalls bool
	}{
		{
			name:      "hermes_call",
			cfg:       output.Config{Dialect: output.Hermes, OfferedTools: []string{"get_weather"}},
			pieces:    []string{"Let me check.", "<tool_call>", `{"name":"get_weather",`, ` "arguments":{"city":"Oslo"}}`, "</tool_call>"},
			content:   "Let me check.",
			calls:     []request.ToolCall{{ID: "call_0", Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
			madeCalls: true,
		},
		{
			name:      "harmony_call",
			cfg:       output.Config{Dialect: output.Harmony, OfferedTools: []string{"get_weather"}},
			pieces:    []string{"<|channel|>", "analysis", "<|message|>", "Check it.", "<|end|>", "<|start|>", "assistant", "<|channel|>", "commentary to", "=functions.get_weather ", "<|constrain|>", "json", "<|message|>", `{"city":`, `"Oslo"}`},
			reasoning: "Check it.",
			calls:     []request.ToolCall{{ID: "call_0", Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
			madeCalls: true,
		},
		{
			name:      "harmony_final",
			cfg:       output.Config{Dialect: output.Harmony},
			pieces:    []string{"<|channel|>", "analysis", "<|message|>", "Easy.", "<|end|>", "<|start|>", "assistant", "<|channel|>", "final", "<|message|>", "Yes."},
			content:   "Yes.",
			reasoning: "Easy.",
		},
		{
			name:      "reasoning_then_answer",
			cfg:       output.Config{ReasoningEnabled: true},
			pieces:    []string{"<thi", "nk>weigh it", "</think>", "Yes."},
			content:   "Yes.",
			reasoning: "weigh it",
		},
		{
			name:    "unoffered_tool_is_content",
			cfg:     output.Config{Dialect: output.Hermes},
			pieces:  []string{"plain answer"},
			content: "plain answer",
		},
		{
			name:    "stop_before_parser",
			cfg:     output.Config{Dialect: output.Hermes, OfferedTools: []string{"f"}},
			stop:    []string{"END"},
			pieces:  []string{"done E", "ND <tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>"},
			content: "done ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var chunks []request.Chunk
			p := Prepared{chat: true, parserCfg: tt.cfg}
			s := newStreamer(nil, p, request.Sampling{Stop: tt.stop}, func(c request.Chunk) { chunks = append(chunks, c) })
			for _, piece := range tt.pieces {
				text, stopped := s.stop.Push(piece)
				s.text(text)
				if stopped {
					break
				}
			}
			made := s.finish()
			var content, reasoning string
			var calls []request.ToolCall
			for _, c := range chunks {
				content += c.Content
				reasoning += c.Reasoning
				if c.Kind == request.ChunkToolCall {
					calls = append(calls, *c.ToolCall)
				}
			}
			if content != tt.content || reasoning != tt.reasoning || made != tt.madeCalls {
				t.Fatalf("content %q reasoning %q calls made %v; want %q %q %v", content, reasoning, made, tt.content, tt.reasoning, tt.madeCalls)
			}
			if len(calls) != len(tt.calls) {
				t.Fatalf("calls %+v, want %+v", calls, tt.calls)
			}
			for i := range calls {
				if calls[i] != tt.calls[i] {
					t.Fatalf("call %d: %+v, want %+v", i, calls[i], tt.calls[i])
				}
			}
		})
	}
}

func TestFiniteLogprob(t *testing.T) {
	inf := float32(1)
	for range 200 {
		inf *= 10
	}
	tests := []struct {
		name string
		in   float32
		want float32
	}{
		{name: "ordinary", in: -1.5, want: -1.5},
		{name: "minus_inf", in: -inf, want: MinLogprob},
		{name: "nan", in: inf - inf, want: MinLogprob},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := finiteLogprob(tt.in); got != tt.want {
				t.Fatalf("finiteLogprob(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
