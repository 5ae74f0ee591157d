package link

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// relaySocket serves r on a fresh Unix socket.
func relaySocket(t *testing.T, r *Relay) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "relay")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "edge.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go r.Serve(t.Context(), ln)
	return sock
}

// TestRelayMetersLinks: a link from a runner on node A to a runner on
// node B (two relays joined by a real Unix-socket stream standing in for
// the QUIC one) counts every object and its bytes on A and times every
// hop by B's acks; a link on one node counts and times too. Before the
// receiving node is reachable the link reports waiting with the dial's
// error, and it connects once the far node answers (the relay retries).
func TestRelayMetersLinks(t *testing.T) {
	b := &Relay{Route: func(string, int, int) (func(context.Context) (io.ReadWriteCloser, error), error) { return nil, nil }}
	reachable := make(chan struct{})
	a := &Relay{Route: func(_ string, link, _ int) (func(context.Context) (io.ReadWriteCloser, error), error) {
		if link == 1 {
			return nil, nil // link 1 stays on A
		}
		return func(ctx context.Context) (io.ReadWriteCloser, error) {
			select {
			case <-reachable:
			default:
				return nil, errors.New("no route to node B")
			}
			x, y := unixPair(t)
			go b.Accept(ctx, y)
			return x, nil
		}, nil
	}}
	sockA, sockB := relaySocket(t, a), relaySocket(t, b)
	dial := func(sock string, rank, ranks int, dir string) net.Conn {
		c, err := DialEdge(sock, EdgeHello{Instance: "inst", Rank: rank, Ranks: ranks, Dir: dir}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// Link 0: rank 0 on A sends to rank 1 on B.
	out0 := dial(sockA, 0, 2, EdgeOut)
	waitFor(t, 5*time.Second, "the link reports the unreachable node", func() bool {
		l := a.Links()
		return len(l) == 1 && l[0].State == LinkWaiting && l[0].Err != "" && l[0].Remote
	})
	in1 := dial(sockB, 1, 2, EdgeIn)
	close(reachable)
	deadline := time.Now().Add(10 * time.Second)
	for _, c := range []net.Conn{out0, in1} {
		if err := AwaitEdge(c, deadline); err != nil {
			t.Fatal(err)
		}
	}
	// Link 1 on A alone: both its ends are on A (the route says so).
	in0, out1 := dial(sockA, 0, 2, EdgeIn), dial(sockA, 1, 2, EdgeOut)
	for _, c := range []net.Conn{in0, out1} {
		if err := AwaitEdge(c, deadline); err != nil {
			t.Fatal(err)
		}
	}
	const objects = 20
	tx0, rx0 := NewConnLink(out0, 1<<20), NewConnLink(in1, 1<<20)
	tx1, rx1 := NewConnLink(out1, 1<<20), NewConnLink(in0, 1<<20)
	var want uint64
	for i := range objects {
		obj := make([]byte, 100+i)
		want += uint64(len(obj) + 4)
		for _, l := range []struct{ tx, rx *ConnLink }{{tx0, rx0}, {tx1, rx1}} {
			if err := l.tx.Send(t.Context(), obj); err != nil {
				t.Fatal(err)
			}
			got, err := l.rx.Recv(t.Context())
			if err != nil || len(got) != len(obj) {
				t.Fatalf("object %d: %d bytes, %v", i, len(got), err)
			}
		}
	}
	waitFor(t, 5*time.Second, "every hop timed", func() bool {
		l := a.Links()
		return len(l) == 2 && l[0].Samples == objects && l[1].Samples == objects
	})
	for _, l := range a.Links() {
		if l.State != LinkConnected || l.Err != "" || l.Objects != objects || l.Bytes != want || l.P50 <= 0 || l.P99 < l.P50 || l.Remote != (l.Link == 0) {
			t.Errorf("link %d: %+v, want connected, %d objects of %d bytes, 0 < p50 <= p99", l.Link, l, objects, want)
		}
	}
	if len(b.Links()) != 0 {
		t.Errorf("the receiving node reports links it does not send on: %+v", b.Links())
	}
	// The sending runner goes: the link closes; Forget drops it, and
	// keeps the link still open.
	out0.Close()
	waitFor(t, 5*time.Second, "link 0 closed", func() bool { return a.Links()[0].State == LinkClosed })
	a.Forget(func(string) bool { return false })
	if l := a.Links(); len(l) != 1 || l[0].Link != 1 || l[0].State != LinkConnected {
		t.Errorf("after Forget: %+v, want only the open link 1", l)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{ms(4, 1, 3, 2), 99, 4 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := Percentile(tt.in, tt.p); got != tt.want {
			t.Errorf("p%d of %v = %v, want %v", tt.p, tt.in, got, tt.want)
		}
	}
}
