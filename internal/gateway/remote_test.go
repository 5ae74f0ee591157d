package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net"
	"testing"

	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
)

// TestRemoteTask runs the data-plane exchange over a real loopback TCP
// connection: the runner's node fetches the payload from the owner, checks
// the reference, and streams chunks back to the owner's waiting client.
func TestRemoteTask(t *testing.T) {
	owner := New(Config{Node: "owner"})
	req := infer.Request{Model: "m", Prompt: "hello", Sampling: infer.Sampling{MaxTokens: 3}}
	payload := infer.TaskPayload{Generate: &req}
	body, _ := json.Marshal(payload)
	ref := event.PayloadRef{Digest: sha256.Sum256(body), Size: uint64(len(body))}
	p := &pending{payload: payload, ref: ref, out: make(chan infer.Chunk, chunkBuffer), gone: make(chan struct{})}
	owner.tasks["task-1"] = p

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		served <- owner.ServeTask(context.Background(), "runner-node", c)
	}()
	rt := &RemoteTasks{Local: New(Config{Node: "runner-node"}), Dial: func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error) {
		if node != "owner" {
			t.Errorf("dialed %s", node)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}}
	ctx := context.Background()
	bad := ref
	bad.Size++
	if _, err := rt.Payload(ctx, "task-1", "owner", bad); err == nil {
		t.Fatal("a payload with a wrong reference was handed over")
	}
	<-served
	go func() {
		c, _ := ln.Accept()
		served <- owner.ServeTask(context.Background(), "runner-node", c)
	}()
	got, err := rt.Payload(ctx, "task-1", "owner", ref)
	if err != nil || got.Generate == nil || got.Generate.Prompt != "hello" {
		t.Fatalf("payload %+v %v", got, err)
	}
	chunks := []infer.Chunk{{Kind: infer.ChunkDelta, Content: "a"}, {Kind: infer.ChunkDelta, Content: "b"},
		{Kind: infer.ChunkDone, FinishReason: infer.FinishLength, Usage: &infer.Usage{PromptTokens: 2, CompletionTokens: 2}}}
	for _, c := range chunks {
		if err := rt.Deliver(ctx, "task-1", "owner", c); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	var text string
	var last infer.Chunk
	for c := range p.out {
		text += c.Content
		last = c
	}
	if text != "ab" || last.Kind != infer.ChunkDone || last.Usage.CompletionTokens != 2 {
		t.Fatalf("owner got %q, last %+v", text, last)
	}
}
