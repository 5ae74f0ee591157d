package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/observe/trace"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
)

// TestRemoteTrace: a traced task tells the far node its trace and parent;
// the spans the far node records come back on the last chunk into the
// owner's recorder, and the chunks the owner passes on carry none. An
// untraced task carries no trace to the far node.
func TestRemoteTrace(t *testing.T) {
	var mu sync.Mutex // got is written on the far side's goroutines
	var got []trace.Scope
	r := tcpRemote(t, func(ctx context.Context, inst ids.InstanceID, task ids.TaskID, p request.TaskPayload) (<-chan request.Chunk, error) {
		sc := trace.ScopeFrom(ctx)
		mu.Lock()
		got = append(got, sc)
		mu.Unlock()
		now := time.Now()
		sc.Rec.Add("worker.serve", 0, sc.Parent, now, now.Add(time.Millisecond))
		out := make(chan request.Chunk, 2)
		out <- request.Chunk{Kind: request.ChunkDelta, Content: "a"}
		out <- request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop}
		close(out)
		return out, nil
	})
	req := request.Request{Model: "m", Prompt: "hello"}
	rec := trace.NewRecorder(trace.NewID(), "owner")
	ctx := trace.WithScope(t.Context(), trace.Scope{Rec: rec, Parent: 42})
	chunks, err := r.Serve(ctx, "far", "inst", "task", request.TaskPayload{Generate: &req})
	if err != nil {
		t.Fatal(err)
	}
	var last request.Chunk
	for c := range chunks {
		last = c
	}
	if last.Kind != request.ChunkDone {
		t.Fatalf("last chunk %+v", last)
	}
	spans := rec.Spans()
	mu.Lock()
	if len(got) != 1 || got[0].Rec == nil || got[0].Rec.ID() != rec.ID() || got[0].Parent != 42 {
		t.Fatalf("the far node's scope %+v", got)
	}
	mu.Unlock()
	if len(spans) != 1 || spans[0].Name != "worker.serve" || spans[0].Node != "far" || spans[0].Parent != 42 || spans[0].Duration != time.Millisecond {
		t.Fatalf("spans %+v", spans)
	}

	chunks, err = r.Serve(t.Context(), "far", "inst", "task-2", request.TaskPayload{Generate: &req})
	if err != nil {
		t.Fatal(err)
	}
	for range chunks {
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[1].Rec != nil {
		t.Fatalf("an untraced task reached the far node traced: %+v", got[1])
	}
}
