package node_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestChatSecondTurnReportsCachedTokens: a chat's second turn resends the
// first turn's prompt and answer, which the runner's prefix cache holds:
// the usage says how many prompt tokens it served (OpenAI's
// prompt_tokens_details.cached_tokens, Anthropic's cache_read_input_tokens,
// Ollama's prompt_eval_count leaving them out), the timings extension
// field agrees, and the metrics count them.
func TestChatSecondTurnReportsCachedTokens(t *testing.T) {
	n := startNode(t, t.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")
	first := "Once upon a time there was a little girl named Lily. She liked to play in the park with her big red ball."
	turn1 := []map[string]any{{"role": "user", "content": first}}
	type usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	type timings struct {
		CacheN     int     `json:"cache_n"`
		PromptN    int     `json:"prompt_n"`
		PredictedN int     `json:"predicted_n"`
		PromptMs   float64 `json:"prompt_ms"`
	}
	var r1 struct {
		Choices []struct {
			Message struct{ Content string }
		}
		Usage   usage
		Timings *timings
	}
	code, b := n.do("POST", "/v1/chat/completions", map[string]any{"model": "stories260k", "max_tokens": 12, "temperature": 0, "messages": turn1})
	if err := json.Unmarshal(b, &r1); code != 200 || err != nil || len(r1.Choices) != 1 {
		t.Fatalf("turn 1: %d %s (%v)", code, b, err)
	}
	if r1.Timings == nil || r1.Timings.PredictedN != 12 || r1.Timings.PromptN+r1.Timings.CacheN != r1.Usage.PromptTokens {
		t.Fatalf("turn 1 timings %+v with usage %+v: want the prompt and 12 predicted tokens counted", r1.Timings, r1.Usage)
	}
	turn2 := append(turn1, map[string]any{"role": "assistant", "content": r1.Choices[0].Message.Content},
		map[string]any{"role": "user", "content": "What did Lily do next?"})
	var r2 struct {
		Usage   usage
		Timings *timings
	}
	code, b = n.do("POST", "/v1/chat/completions", map[string]any{"model": "stories260k", "max_tokens": 4, "temperature": 0, "messages": turn2})
	if err := json.Unmarshal(b, &r2); code != 200 || err != nil {
		t.Fatalf("turn 2: %d %s (%v)", code, b, err)
	}
	d := r2.Usage.PromptTokensDetails
	if d == nil || d.CachedTokens < r1.Usage.PromptTokens/2 || d.CachedTokens >= r2.Usage.PromptTokens {
		t.Fatalf("turn 2 usage %s: want cached_tokens of at least half turn 1's %d prompt tokens", b, r1.Usage.PromptTokens)
	}
	if r2.Timings == nil || r2.Timings.CacheN != d.CachedTokens || r2.Timings.PromptN != r2.Usage.PromptTokens-d.CachedTokens {
		t.Fatalf("turn 2 timings %+v, usage %+v: want cache_n = cached_tokens and prompt_n the rest", r2.Timings, r2.Usage)
	}

	var r3 struct {
		Usage struct {
			InputTokens          int `json:"input_tokens"`
			CacheReadInputTokens int `json:"cache_read_input_tokens"`
		}
	}
	code, b = n.do("POST", "/v1/messages", map[string]any{"model": "stories260k", "max_tokens": 4, "temperature": 0, "messages": turn2})
	if err := json.Unmarshal(b, &r3); code != 200 || err != nil {
		t.Fatalf("anthropic turn 2: %d %s (%v)", code, b, err)
	}
	if r3.Usage.CacheReadInputTokens == 0 || r3.Usage.InputTokens+r3.Usage.CacheReadInputTokens < r2.Usage.PromptTokens-2 {
		t.Fatalf("anthropic turn 2 usage %+v: want cache reads, and with input_tokens the whole prompt", r3.Usage)
	}

	// Streamed, message_start already says what the final usage says:
	// the cache reads apart from input_tokens.
	code, b = n.do("POST", "/v1/messages", map[string]any{"model": "stories260k", "max_tokens": 4, "temperature": 0, "stream": true, "messages": turn2})
	if code != 200 {
		t.Fatalf("anthropic turn 2 streamed: %d %s", code, b)
	}
	type anthropicUsage struct {
		InputTokens          int `json:"input_tokens"`
		CacheReadInputTokens int `json:"cache_read_input_tokens"`
	}
	var start struct {
		Message struct{ Usage anthropicUsage }
	}
	var delta struct{ Usage anthropicUsage }
	for line := range strings.SplitSeq(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		switch {
		case ok && strings.Contains(data, `"message_start"`):
			json.Unmarshal([]byte(data), &start)
		case ok && strings.Contains(data, `"message_delta"`):
			json.Unmarshal([]byte(data), &delta)
		}
	}
	if start.Message.Usage.CacheReadInputTokens == 0 || start.Message.Usage != delta.Usage {
		t.Fatalf("message_start usage %+v, message_delta %+v: want the same, with cache reads\n%s", start.Message.Usage, delta.Usage, b)
	}

	var r4 struct {
		Usage struct {
			InputTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		}
		Timings *timings
	}
	code, b = n.do("POST", "/v1/responses", map[string]any{"model": "stories260k", "max_output_tokens": 4, "temperature": 0, "input": turn2})
	if err := json.Unmarshal(b, &r4); code != 200 || err != nil {
		t.Fatalf("responses turn 2: %d %s (%v)", code, b, err)
	}
	if r4.Usage.InputTokensDetails.CachedTokens == 0 || r4.Timings == nil || r4.Timings.CacheN != r4.Usage.InputTokensDetails.CachedTokens {
		t.Fatalf("responses turn 2: %s: want cached_tokens and timings agreeing", b)
	}

	code, b = n.do("GET", "/metrics", nil)
	if code != 200 || !strings.Contains(string(b), `skulk_cached_prompt_tokens_total{model="stories260k"}`) {
		t.Fatalf("metrics: %d, no skulk_cached_prompt_tokens_total for stories260k", code)
	}
}

// TestTooManySlotsRefused: a node whose SKULK_SLOTS exceeds what the
// window placement admitted can hold at 256 tokens a slot gets runners that
// refuse to load and say the arithmetic, in the State.
func TestTooManySlotsRefused(t *testing.T) {
	n := startNode(t, t.TempDir(), "SKULK_SLOTS=64")
	n.place()
	want := "64 slots need at least 64 × 256 = 16384 tokens of KV cache"
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, b := n.do("GET", "/state", nil); strings.Contains(string(b), want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_, b := n.do("GET", "/state", nil)
	t.Fatalf("the State never said %q:\n%s", want, b)
}
