package api

import (
	"context"
	"testing"

	"github.com/skulk/skulk/internal/infer"
)

// TestCollect: a whole answer gets every chunk up to the done one; a task
// that fails, or whose stream closes without a final chunk, gives an error;
// a client that left gives nothing.
func TestCollect(t *testing.T) {
	delta := infer.Chunk{Kind: infer.ChunkDelta, Content: "hi"}
	done := infer.Chunk{Kind: infer.ChunkDone, FinishReason: infer.FinishStop}
	failed := infer.Chunk{Kind: infer.ChunkError, Error: infer.Errorf(infer.ClassUnavailable, "busy")}
	tests := []struct {
		name   string
		chunks []infer.Chunk
		close  bool
		added  int
		class  infer.Class // "" when the task ends well
	}{
		{"done", []infer.Chunk{delta, delta, done, delta}, false, 3, ""},
		{"error", []infer.Chunk{delta, failed}, false, 1, infer.ClassUnavailable},
		{"error_without_reason", []infer.Chunk{{Kind: infer.ChunkError}}, false, 0, infer.ClassInternal},
		{"closed_early", []infer.Chunk{delta}, true, 1, infer.ClassInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := make(chan infer.Chunk, len(tt.chunks))
			for _, c := range tt.chunks {
				ch <- c
			}
			if tt.close {
				close(ch)
			}
			added := 0
			err, ok := collect(t.Context(), ch, func(infer.Chunk) { added++ })
			if !ok || added != tt.added {
				t.Fatalf("collect added %d chunks, ok %v; want %d, true", added, ok, tt.added)
			}
			if tt.class == "" && err != nil || tt.class != "" && (err == nil || err.Class != tt.class) {
				t.Errorf("collect = %v, want class %q", err, tt.class)
			}
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err, ok := collect(ctx, make(chan infer.Chunk), func(infer.Chunk) { t.Error("added a chunk after the client left") }); ok || err != nil {
		t.Errorf("collect after the client left = %v, %v; want nil, false", err, ok)
	}
}
