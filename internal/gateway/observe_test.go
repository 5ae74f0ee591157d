package gateway

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/infer"
)

// recorder is an Observer that writes down what it hears.
type recorder struct{ got []string }

func (r *recorder) FirstToken(model string, d time.Duration) {
	r.got = append(r.got, fmt.Sprintf("first %s %s", model, d))
}
func (r *recorder) TokenGap(model string, d time.Duration) {
	r.got = append(r.got, fmt.Sprintf("gap %s %s", model, d))
}
func (r *recorder) Tokens(model string, prompt, generated int) {
	r.got = append(r.got, fmt.Sprintf("tokens %s %d %d", model, prompt, generated))
}
func (r *recorder) Timings(model string, cached int, prompt, decode time.Duration) {
	r.got = append(r.got, fmt.Sprintf("timings %s %d %s %s", model, cached, prompt, decode))
}

// TestTaskObservation feeds a task's chunks, one a second, through the
// observation the forwarder keeps and checks what the Observer hears.
func TestTaskObservation(t *testing.T) {
	usage := func(p, c int) *infer.Usage { return &infer.Usage{PromptTokens: p, CompletionTokens: c} }
	prompt := infer.Chunk{Kind: infer.ChunkDelta, Usage: usage(5, 0)}
	text := func(s string) infer.Chunk { return infer.Chunk{Kind: infer.ChunkDelta, Content: s} }
	done := infer.Chunk{Kind: infer.ChunkDone, FinishReason: infer.FinishLength, Usage: usage(5, 3)}
	tests := []struct {
		name    string
		payload infer.TaskPayload
		chunks  []infer.Chunk
		want    []string
	}{
		{"generation", infer.TaskPayload{Generate: &infer.Request{}},
			[]infer.Chunk{prompt, text("a"), text("b"), text("c"), done},
			[]string{"first m 2s", "gap m 1s", "gap m 1s", "tokens m 5 3"}},
		{"reasoning and a tool call are outputs", infer.TaskPayload{Generate: &infer.Request{}},
			[]infer.Chunk{prompt, {Kind: infer.ChunkDelta, Reasoning: "hm"}, {Kind: infer.ChunkToolCall, ToolCall: &infer.ToolCall{Name: "f"}}, done},
			[]string{"first m 2s", "gap m 1s", "tokens m 5 3"}},
		{"logprobs alone are no output", infer.TaskPayload{Generate: &infer.Request{}},
			[]infer.Chunk{prompt, text("a"), {Kind: infer.ChunkDelta, Logprobs: []infer.TokenLogprob{{Token: "a"}}}, done},
			[]string{"first m 2s", "tokens m 5 3"}},
		{"nothing generated", infer.TaskPayload{Generate: &infer.Request{}},
			[]infer.Chunk{prompt, {Kind: infer.ChunkDone, FinishReason: infer.FinishStop, Usage: usage(5, 0)}},
			[]string{"tokens m 5 0"}},
		{"failed task counts no usage", infer.TaskPayload{Generate: &infer.Request{}},
			[]infer.Chunk{prompt, text("a"), {Kind: infer.ChunkError, Error: infer.Errorf(infer.ClassInternal, "boom")}},
			[]string{"first m 2s"}},
		{"embedding counts its prompt", infer.TaskPayload{Embed: &infer.EmbedRequest{}},
			[]infer.Chunk{{Kind: infer.ChunkDone, Usage: usage(7, 0), Embeddings: [][]float32{{1}}}},
			[]string{"tokens m 7 0"}},
		{"timings are counted", infer.TaskPayload{Generate: &infer.Request{}},
			[]infer.Chunk{prompt, text("a"), {Kind: infer.ChunkDone, FinishReason: infer.FinishStop, Usage: &infer.Usage{PromptTokens: 5, CompletionTokens: 1,
				CachedTokens: 2, Timings: infer.NewTimings(2, 3, 1.5, 1, 0)}}},
			[]string{"first m 2s", "tokens m 5 1", "timings m 2 1.5ms 0s"}},
		{"count_tokens runs no model", infer.TaskPayload{Generate: &infer.Request{CountOnly: true}},
			[]infer.Chunk{{Kind: infer.ChunkDone, Usage: usage(9, 0)}},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			clock := time.Unix(0, 0)
			g := New(Config{Observer: rec, Now: func() time.Time { return clock }})
			obs := g.observe("m", tt.payload)
			for _, c := range tt.chunks {
				clock = clock.Add(time.Second)
				obs.chunk(&c)
			}
			if !slices.Equal(rec.got, tt.want) {
				t.Errorf("observer heard %q, want %q", rec.got, tt.want)
			}
		})
	}
}
