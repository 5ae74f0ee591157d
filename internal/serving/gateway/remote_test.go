package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
)

// tcpRemote serves every data-plane stream of a real loopback TCP listener
// with serve, and returns a Remote that dials it.
func tcpRemote(t *testing.T, serve LocalServe) *Remote {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { ServeTask(context.Background(), c, "far", serve) })
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return &Remote{Dial: func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}}
}

// TestRemoteTask runs the data-plane exchange over a real loopback TCP
// connection: the owner sends the task, the instance's node runs it and
// streams the chunks back.
func TestRemoteTask(t *testing.T) {
	want := []request.Chunk{{Kind: request.ChunkDelta, Content: "a"}, {Kind: request.ChunkDelta, Content: "b"},
		{Kind: request.ChunkDone, FinishReason: request.FinishLength, Usage: &request.Usage{PromptTokens: 2, CompletionTokens: 2}}}
	r := tcpRemote(t, func(ctx context.Context, inst ids.InstanceID, task ids.TaskID, p request.TaskPayload) (<-chan request.Chunk, error) {
		if inst != "inst-1" || task != "task-1" || p.Generate == nil || p.Generate.Prompt != "hello" {
			return nil, fault.Errorf(fault.ClassInvalid, "got %s %s %+v", inst, task, p)
		}
		out := make(chan request.Chunk, len(want))
		for _, c := range want {
			out <- c
		}
		close(out)
		return out, nil
	})
	req := request.Request{Model: "m", Prompt: "hello", Sampling: request.Sampling{MaxTokens: 3}}
	chunks, err := r.Serve(t.Context(), "far", "inst-1", "task-1", request.TaskPayload{Generate: &req})
	if err != nil {
		t.Fatal(err)
	}
	var text string
	var last request.Chunk
	for c := range chunks {
		text += c.Content
		last = c
	}
	if text != "ab" || last.Kind != request.ChunkDone || last.Usage.CompletionTokens != 2 {
		t.Fatalf("owner got %q, last %+v", text, last)
	}

	// A refusal on the far side arrives as an error chunk with its class.
	chunks, err = r.Serve(t.Context(), "far", "other", "task-2", request.TaskPayload{Generate: &req})
	if err != nil {
		t.Fatal(err)
	}
	c := <-chunks
	if c.Kind != request.ChunkError || c.Error.Class != fault.ClassInvalid {
		t.Fatalf("refusal came as %+v", c)
	}
	r.Wait()
}

// TestRemoteNodeGoesAway: a stream cut mid-answer ends the client's stream
// with an error chunk, never a silent truncation.
func TestRemoteNodeGoesAway(t *testing.T) {
	r := tcpRemote(t, func(ctx context.Context, inst ids.InstanceID, task ids.TaskID, p request.TaskPayload) (<-chan request.Chunk, error) {
		return nil, io.ErrUnexpectedEOF // ServeTask answers with an error chunk
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		var b [64]byte
		c.Read(b[:]) // the task frame, then hang up mid-answer
		c.Write([]byte{0, 0, 0, 9, '{'})
		c.Close()
	}()
	r.Dial = func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}
	chunks, err := r.Serve(t.Context(), "far", "inst", "task", request.TaskPayload{})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := <-chunks
	if !ok || c.Kind != request.ChunkError || c.Error.Class != fault.ClassUnavailable {
		t.Fatalf("got %+v %v", c, ok)
	}
	if _, ok := <-chunks; ok {
		t.Fatal("the stream goes on after its error chunk")
	}
}

// stateMaster is a Master whose State holds one ready instance of model m
// on node "far" (a fake of the control plane: the test is about the data
// plane).
type stateMaster struct{}

func (stateMaster) Execute(context.Context, event.Command) ([]event.IndexedEvent, error) {
	return nil, nil
}

func (stateMaster) State(context.Context) (state.State, error) {
	return state.State{Instances: map[ids.InstanceID]state.Instance{"inst-1": {Model: "m", Status: state.InstanceReady,
		Placement: []event.Shard{{Node: "far", LayerStart: 0, LayerEnd: 1}}}}}, nil
}

// TestCancelRemoteRequests cancels 1,000 requests running on another node:
// each cancellation reaches the far side's task, and afterwards nothing is
// left: no stream goroutine, no in-flight count, no goroutine of the test's
// server.
func TestCancelRemoteRequests(t *testing.T) {
	before := runtime.NumGoroutine()
	var started, cancelled atomic.Int64
	r := tcpRemote(t, func(ctx context.Context, inst ids.InstanceID, task ids.TaskID, p request.TaskPayload) (<-chan request.Chunk, error) {
		started.Add(1)
		out := make(chan request.Chunk)
		go func() {
			defer close(out)
			select {
			case out <- request.Chunk{Kind: request.ChunkDelta, Content: "x"}:
			case <-ctx.Done():
			}
			<-ctx.Done() // a long answer, until the task is cancelled
			cancelled.Add(1)
		}()
		return out, nil
	})
	var id atomic.Int64
	g := New(Config{Node: "owner", Master: stateMaster{}, Remote: r.Serve, NewID: func() string { return fmt.Sprint(id.Add(1)) }})
	const n = 1000
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithCancel(t.Context())
		req := request.Request{Model: "m", Prompt: "p", Sampling: request.Sampling{MaxTokens: 1}}
		chunks, err := g.submit(ctx, "m", request.TaskPayload{Generate: &req})
		if err != nil {
			t.Fatal(err)
		}
		if c := <-chunks; c.Content != "x" {
			t.Fatalf("first chunk %+v", c)
		}
		cancel()
		for range chunks {
		}
	}
	r.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for cancelled.Load() < n || len(g.Inflight()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d cancellations: %d far tasks cancelled, in flight %v", n, cancelled.Load(), g.Inflight())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if started.Load() != n {
		t.Fatalf("%d tasks started, want %d", started.Load(), n)
	}
	for time.Now().Before(deadline) && runtime.NumGoroutine() > before+3 {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before+3 { // the listener's accept loop and its cleanup
		t.Fatalf("%d goroutines left after the cancellations (before: %d)", g, before)
	}
}

// TestRemoteRequestObserved: the chunks of a request served by another
// node reach the Observer from the goroutine that reads them off the data
// plane (the gateway keeps no goroutine of its own in between), and the
// request leaves the count in flight once its stream ends.
func TestRemoteRequestObserved(t *testing.T) {
	r := tcpRemote(t, func(ctx context.Context, inst ids.InstanceID, task ids.TaskID, p request.TaskPayload) (<-chan request.Chunk, error) {
		out := make(chan request.Chunk, 2)
		out <- request.Chunk{Kind: request.ChunkDelta, Content: "a"}
		out <- request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop, Usage: &request.Usage{PromptTokens: 3, CompletionTokens: 1}}
		close(out)
		return out, nil
	})
	rec := &recorder{}
	g := New(Config{Node: "owner", Master: stateMaster{}, Remote: r.Serve, NewID: func() string { return "task-1" }, Observer: rec,
		Now: func() time.Time { return time.Unix(0, 0) }})
	req := request.Request{Model: "m", Prompt: "p", Sampling: request.Sampling{MaxTokens: 1}}
	chunks, err := g.submit(t.Context(), "m", request.TaskPayload{Generate: &req})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Inflight()["inst-1"]; got != 1 {
		t.Fatalf("in flight while streaming: %d, want 1", got)
	}
	n := 0
	for range chunks {
		n++
	}
	r.Wait()
	if want := []string{"first m 0s", "tokens m 3 1"}; n != 2 || !slices.Equal(rec.got, want) {
		t.Fatalf("%d chunks, observed %q; want 2, %q", n, rec.got, want)
	}
	if len(g.Inflight()) != 0 {
		t.Fatalf("in flight after the stream ended: %v", g.Inflight())
	}
}
