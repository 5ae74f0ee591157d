package api

import (
	"context"
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

// TestCollect: a whole answer gets every chunk up to the done one; a task
// that fails, or whose stream closes without a final chunk, gives an error;
// a client that left gives nothing.
func TestCollect(t *testing.T) {
	delta := request.Chunk{Kind: request.ChunkDelta, Content: "hi"}
	done := request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop}
	failed := request.Chunk{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassUnavailable, "busy")}
	tests := []struct {
		name   string
		chunks []request.Chunk
		close  bool
		added  int
		class  fault.Class // "" when the task ends well
	}{
		{"done", []request.Chunk{delta, delta, done, delta}, false, 3, ""},
		{"error", []request.Chunk{delta, failed}, false, 1, fault.ClassUnavailable},
		{"error_without_reason", []request.Chunk{{Kind: request.ChunkError}}, false, 0, fault.ClassInternal},
		{"closed_early", []request.Chunk{delta}, true, 1, fault.ClassInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := make(chan request.Chunk, len(tt.chunks))
			for _, c := range tt.chunks {
				ch <- c
			}
			if tt.close {
				close(ch)
			}
			added := 0
			err, ok := collect(t.Context(), ch, func(request.Chunk) { added++ })
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
	if err, ok := collect(ctx, make(chan request.Chunk), func(request.Chunk) { t.Error("added a chunk after the client left") }); ok || err != nil {
		t.Errorf("collect after the client left = %v, %v; want nil, false", err, ok)
	}
}
