package gateway

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
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
	usage := func(p, c int) *request.Usage { return &request.Usage{PromptTokens: p, CompletionTokens: c} }
	prompt := request.Chunk{Kind: request.ChunkDelta, Usage: usage(5, 0)}
	text := func(s string) request.Chunk { return request.Chunk{Kind: request.ChunkDelta, Content: s} }
	done := request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishLength, Usage: usage(5, 3)}
	tests := []struct {
		name    string
		payload request.TaskPayload
		chunks  []request.Chunk
		want    []string
	}{
		{"generation", request.TaskPayload{Generate: &request.Request{}},
			[]request.Chunk{prompt, text("a"), text("b"), text("c"), done},
			[]string{"first m 2s", "gap m 1s", "gap m 1s", "tokens m 5 3"}},
		{"reasoning and a tool call are outputs", request.TaskPayload{Generate: &request.Request{}},
			[]request.Chunk{prompt, {Kind: request.ChunkDelta, Reasoning: "hm"}, {Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{Name: "f"}}, done},
			[]string{"first m 2s", "gap m 1s", "tokens m 5 3"}},
		{"logprobs alone are no output", request.TaskPayload{Generate: &request.Request{}},
			[]request.Chunk{prompt, text("a"), {Kind: request.ChunkDelta, Logprobs: []request.TokenLogprob{{Token: "a"}}}, done},
			[]string{"first m 2s", "tokens m 5 3"}},
		{"nothing generated", request.TaskPayload{Generate: &request.Request{}},
			[]request.Chunk{prompt, {Kind: request.ChunkDone, FinishReason: request.FinishStop, Usage: usage(5, 0)}},
			[]string{"tokens m 5 0"}},
		{"failed task counts no usage", request.TaskPayload{Generate: &request.Request{}},
			[]request.Chunk{prompt, text("a"), {Kind: request.ChunkError, Error: fault.Errorf(fault.ClassInternal, "boom")}},
			[]string{"first m 2s"}},
		{"embedding counts its prompt", request.TaskPayload{Embed: &request.EmbedRequest{}},
			[]request.Chunk{{Kind: request.ChunkDone, Usage: usage(7, 0), Embeddings: [][]float32{{1}}}},
			[]string{"tokens m 7 0"}},
		{"timings are counted", request.TaskPayload{Generate: &request.Request{}},
			[]request.Chunk{prompt, text("a"), {Kind: request.ChunkDone, FinishReason: request.FinishStop, Usage: &request.Usage{PromptTokens: 5, CompletionTokens: 1,
				CachedTokens: 2, Timings: request.NewTimings(2, 3, 1.5, 1, 0)}}},
			[]string{"first m 2s", "tokens m 5 1", "timings m 2 1.5ms 0s"}},
		{"count_tokens runs no model", request.TaskPayload{Generate: &request.Request{CountOnly: true}},
			[]request.Chunk{{Kind: request.ChunkDone, Usage: usage(9, 0)}},
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
