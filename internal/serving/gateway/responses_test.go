package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"

	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
)

// TestPeerResponses runs lookups over real loopback TCP connections to
// three peers: one holds the conversation, one does not, one cannot be
// dialed. The conversation comes back whole; an id nobody holds is not
// found; the node never asks itself.
func TestPeerResponses(t *testing.T) {
	conv := []request.Message{
		{Role: "user", Content: "Once upon a time"},
		{Role: "assistant", Content: ", there was a little girl named Lily."},
	}
	stores := map[ids.NodeID]map[string][]request.Message{
		"holder": {"resp_1": conv},
		"empty":  {},
	}
	dial := func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error) {
		if node == "self" {
			t.Error("the node asked itself")
		}
		store, ok := stores[node]
		if !ok {
			return nil, errors.New("unreachable")
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		go func() {
			defer ln.Close()
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ServeResponseLookup(context.Background(), c, func(id string) ([]request.Message, bool) {
				m, ok := store[id]
				return m, ok
			})
		}()
		return net.Dial("tcp", ln.Addr().String())
	}
	p := PeerResponses{Self: "self", Dial: dial,
		Members: func() []ids.NodeID { return []ids.NodeID{"self", "empty", "down", "holder"} }}
	got, ok := p.Lookup(context.Background(), "resp_1")
	if !ok || !reflect.DeepEqual(got, conv) {
		t.Fatalf("Lookup(resp_1) = %+v, %v; want %+v", got, ok, conv)
	}
	if got, ok := p.Lookup(context.Background(), "resp_2"); ok {
		t.Fatalf("Lookup(resp_2) found %+v", got)
	}
}
