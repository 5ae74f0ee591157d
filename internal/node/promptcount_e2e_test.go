package node_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPromptCountLeadsTheStream: the runner says the prompt's size before
// prompt processing, so Anthropic's message_start carries input_tokens
// (not 0), and Ollama's timings still split at the first generated text.
func TestPromptCountLeadsTheStream(t *testing.T) {
	n := startNode(t, t.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")

	code, b := n.do("POST", "/v1/messages", map[string]any{"model": "stories260k", "max_tokens": 8, "temperature": 0, "stream": true,
		"messages": []map[string]any{{"role": "user", "content": "Once upon a time"}}})
	if code != 200 {
		t.Fatalf("stream: %d %s", code, b)
	}
	var start struct {
		Type    string
		Message struct {
			Usage struct {
				InputTokens int `json:"input_tokens"`
			}
		}
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			if err := json.Unmarshal([]byte(data), &start); err != nil {
				t.Fatalf("first event %q: %v", data, err)
			}
			break
		}
	}
	var delta struct {
		Usage struct {
			InputTokens int `json:"input_tokens"`
		}
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"message_delta"`) {
			json.Unmarshal([]byte(data), &delta)
		}
	}
	if start.Type != "message_start" || start.Message.Usage.InputTokens == 0 || start.Message.Usage.InputTokens != delta.Usage.InputTokens {
		t.Fatalf("message_start %+v, message_delta %+v: want the same non-zero input_tokens in both\n%s", start, delta, b)
	}

	code, b = n.do("POST", "/api/generate", map[string]any{"model": "stories260k", "prompt": "Once upon a time", "stream": false,
		"options": map[string]any{"temperature": 0, "num_predict": 16}})
	var gen struct {
		PromptEvalCount    int   `json:"prompt_eval_count"`
		PromptEvalDuration int64 `json:"prompt_eval_duration"`
		EvalCount          int   `json:"eval_count"`
		EvalDuration       int64 `json:"eval_duration"`
	}
	if err := json.Unmarshal(b, &gen); code != 200 || err != nil {
		t.Fatalf("generate: %d %s (%v)", code, b, err)
	}
	if gen.PromptEvalCount == 0 || gen.PromptEvalDuration <= 0 || gen.EvalCount != 16 || gen.EvalDuration <= 0 {
		t.Fatalf("ollama metrics %+v: want counts and both durations positive", gen)
	}
}
