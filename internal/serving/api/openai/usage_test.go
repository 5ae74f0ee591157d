package openai

import (
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/serving/request"
)

// TestCachedTokensAndTimings: the prompt tokens the prefix cache served go
// in prompt_tokens_details.cached_tokens (prompt_tokens still counts them),
// and the runner's timings in the extension field "timings", of a whole
// answer and of a stream's finishing chunk.
func TestCachedTokensAndTimings(t *testing.T) {
	u := &request.Usage{PromptTokens: 10, CompletionTokens: 2, CachedTokens: 6, Timings: request.NewTimings(6, 4, 8, 2, 10)}
	done := request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop, Usage: u}
	wantUsage := `"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":6}}`
	wantTimings := `"timings":{"cache_n":6,"prompt_n":4,"prompt_ms":8,"prompt_per_token_ms":2,"prompt_per_second":500,"predicted_n":2,"predicted_ms":10,"predicted_per_token_ms":5,"predicted_per_second":200}`
	a := NewChatAccumulator(meta)
	a.Add(done)
	whole := marshalAll(t, []ChatCompletion{a.Result()})[0]
	if !strings.Contains(whole, wantUsage) || !strings.Contains(whole, wantTimings) {
		t.Errorf("chat completion %s\nwant %s and %s", whole, wantUsage, wantTimings)
	}
	lines := marshalAll(t, NewChatStream(meta, true).Encode(done))
	n := len(lines) // the first is the role's opening chunk
	if n != 3 || !strings.Contains(lines[n-2], wantTimings) || !strings.Contains(lines[n-1], wantUsage) {
		t.Errorf("stream end %q\nwant timings on the finishing chunk and the usage on the last", lines)
	}
	c := NewCompletionAccumulator(meta)
	c.Add(done)
	if got := marshalAll(t, []TextCompletion{c.Result()})[0]; !strings.Contains(got, wantUsage) || !strings.Contains(got, wantTimings) {
		t.Errorf("text completion %s", got)
	}
	a = NewChatAccumulator(meta)
	a.Add(request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop, Usage: &request.Usage{PromptTokens: 3}})
	if got := marshalAll(t, []ChatCompletion{a.Result()})[0]; strings.Contains(got, "cached_tokens") || strings.Contains(got, "timings") {
		t.Errorf("an answer without a cache hit or timings: %s", got)
	}
}
