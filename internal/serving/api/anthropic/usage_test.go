package anthropic

import (
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/serving/request"
)

// TestCacheReadInputTokens: as Anthropic counts them, input_tokens leaves
// out the prompt tokens read from the cache, which cache_read_input_tokens
// counts; the runner's timings ride in the extension field "timings".
func TestCacheReadInputTokens(t *testing.T) {
	done := request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop,
		Usage: &request.Usage{PromptTokens: 10, CompletionTokens: 2, CachedTokens: 6, Timings: request.NewTimings(6, 4, 8, 2, 10)}}
	a := NewAccumulator(meta)
	a.Add(done)
	whole := mustJSON(t, a.Result())
	for _, want := range []string{`"usage":{"input_tokens":4,"output_tokens":2,"cache_read_input_tokens":6}`, `"timings":{"cache_n":6,"prompt_n":4`} {
		if !strings.Contains(whole, want) {
			t.Errorf("message %s\nwant %s", whole, want)
		}
	}
	events := wire(t, NewStream(meta).Encode(done))
	joined := strings.Join(events, "\n")
	for _, want := range []string{`"usage":{"input_tokens":4,"output_tokens":2,"cache_read_input_tokens":6}`, `"timings":{"cache_n":6`} {
		if !strings.Contains(joined, want) {
			t.Errorf("stream %s\nwant %s", joined, want)
		}
	}
}
