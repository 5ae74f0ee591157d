package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"testing"

	"github.com/skulk/skulk/internal/dataplane"
	"github.com/skulk/skulk/internal/testkit"
)

// The edge adapter satisfies the payload data plane's connection interface
// by its method set alone; transport does not import dataplane.
var _ dataplane.PeerConn = EdgeConn[dataplane.SendStream, dataplane.RecvStream]{}

// And the concrete streams satisfy dataplane's stream interfaces.
var (
	_ dataplane.SendStream = (*SendStream)(nil)
	_ dataplane.RecvStream = (*RecvStream)(nil)
)

func TestEdgeUniStreamRoundTrip(t *testing.T) {
	testkit.NoLeaks(t)
	type got struct {
		data []byte
		err  error
	}
	results := make(chan got, 2)
	reg := newRegistry()
	a := newNode(t, "node-a", reg)
	b := newNode(t, "node-b", reg, withHandler(ALPNEdge, func(ctx context.Context, c *Conn) {
		var pc dataplane.PeerConn = Edge[dataplane.SendStream, dataplane.RecvStream](c)
		for {
			s, err := pc.AcceptUniStream(ctx)
			if err != nil {
				return
			}
			data, err := io.ReadAll(s)
			results <- got{data, err}
		}
	}))
	c, err := a.ep.Dial(ctxT(t), b.id, []string{b.addr()}, ALPNEdge)
	if err != nil {
		t.Fatal(err)
	}
	var pc dataplane.PeerConn = Edge[dataplane.SendStream, dataplane.RecvStream](c)
	s, err := pc.OpenUniStream(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 1<<20)
	rand.Read(payload)
	if _, err := s.Write(payload); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-results
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !bytes.Equal(r.data, payload) {
		t.Fatalf("received %d bytes, want the %d sent", len(r.data), len(payload))
	}

	// Abort on the sender resets the stream: the receiver sees an error, not EOF.
	s2, err := pc.OpenUniStream(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	s2.Abort()
	if r := <-results; r.err == nil {
		t.Fatalf("an aborted stream read cleanly: %q", r.data)
	}
}
