//go:build linux

package dataplane

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// edgeEnds is one edge from node a to node b: the runner-side writer on a's
// egress ring and the runner-side reader on b's ingress ring.
type edgeEnds struct {
	edge       EdgeID
	egress     *ringFixture
	ingress    *ringFixture
	writerRing *Producer // runner on a
	pumpOut    *Consumer // send pump on a
	pumpIn     *Producer // recv pump on b
	readerRing *Consumer // runner on b
}

func newEdgeEnds(t *testing.T, edge EdgeID, capacity uint64, a, b *testNode) *edgeEnds {
	t.Helper()
	e := &edgeEnds{edge: edge, egress: newRingFixture(t, capacity), ingress: newRingFixture(t, capacity)}
	e.writerRing, e.pumpOut = openPair(t, e.egress)
	e.pumpIn, e.readerRing = openPair(t, e.ingress)
	// Registered after the rings, so it runs first: pumps stop before the
	// doorbells and arenas they use are closed.
	t.Cleanup(func() {
		_, _ = a.driver.StopEdge(context.Background(), edge)
		_, _ = b.driver.StopEdge(context.Background(), edge)
	})
	return e
}

func (e *edgeEnds) establishSend(t *testing.T, a, b *testNode) {
	t.Helper()
	if err := a.driver.EstablishSend(t.Context(), SendSpec{Edge: e.edge, Peer: b.id, Ring: e.pumpOut}); err != nil {
		t.Fatal(err)
	}
}

func (e *edgeEnds) establishRecv(t *testing.T, b *testNode) {
	t.Helper()
	if err := b.driver.EstablishRecv(t.Context(), RecvSpec{Edge: e.edge, Ring: e.pumpIn}); err != nil {
		t.Fatal(err)
	}
}

// sendObjects writes count pattern objects of size bytes in a goroutine.
func sendObjects(ctx context.Context, e *edgeEnds, spec ObjectSpec, count, size int) <-chan error {
	errc := make(chan error, 1)
	go func() {
		w := NewObjectWriter(e.writerRing, e.edge, spec, Identity{}, nil)
		buf := make([]byte, size)
		for i := range count {
			fillPattern(buf, uint64(i*size))
			if err := w.Write(ctx, ObjectID(i+1), uint64(i), 0, buf); err != nil {
				errc <- err
				return
			}
		}
		errc <- w.Close()
	}()
	return errc
}

func recvObjects(t *testing.T, ctx context.Context, e *edgeEnds, spec ObjectSpec, count, size int) {
	t.Helper()
	r := NewObjectReader(e.readerRing, e.edge, spec, Identity{}, nil)
	buf := make([]byte, size)
	for i := range count {
		o, err := r.Next(ctx, buf)
		if err != nil {
			t.Fatalf("edge %d object %d: %v", e.edge, i, err)
		}
		if o.Header.ObjectID != ObjectID(i+1) || o.Header.Sequence != uint64(i) || len(o.Payload) != size {
			t.Fatalf("edge %d object %d: header %+v", e.edge, i, o.Header)
		}
		if err := checkPattern(o.Payload, uint64(i*size)); err != nil {
			t.Fatalf("edge %d object %d: %v", e.edge, i, err)
		}
	}
	if _, err := r.Next(ctx, nil); err != io.EOF {
		t.Fatalf("edge %d after last object: %v, want io.EOF", e.edge, err)
	}
}

func TestEdgePairingEitherOrder(t *testing.T) {
	spec := ObjectSpec{MaxExtent: 1 << 20, Sequence: SequenceContiguous}
	tests := []struct {
		name         string
		streamFirst  bool
		count, size  int
		ringCapacity uint64
	}{
		{"spec_before_stream", false, 64, 100_000, 64 << 10},
		{"stream_before_spec", true, 64, 100_000, 64 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := newTestNodes(t, 2, 1<<20)
			a, b := nodes[0], nodes[1]
			e := newEdgeEnds(t, 42, tt.ringCapacity, a, b)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if !tt.streamFirst {
				e.establishRecv(t, b)
			}
			e.establishSend(t, a, b)
			errc := sendObjects(ctx, e, spec, tt.count, tt.size)
			if tt.streamFirst {
				waitFor(t, func() bool { s, _ := b.driver.Stats(ctx); return s.PendingStreams == 1 })
				e.establishRecv(t, b)
			}
			recvObjects(t, ctx, e, spec, tt.count, tt.size)
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			b.waitEvent(t, EdgeReady, 42)
			b.waitEvent(t, StreamClosed, 42)
			a.waitEvent(t, StreamClosed, 42)
		})
	}
}

func TestEdgesShareOnePeerConnection(t *testing.T) {
	nodes := newTestNodes(t, 2, 1<<20)
	a, b := nodes[0], nodes[1]
	spec := ObjectSpec{MaxExtent: 1 << 16, Sequence: SequenceContiguous}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	edges := []*edgeEnds{newEdgeEnds(t, 1, 16<<10, a, b), newEdgeEnds(t, 2, 16<<10, a, b), newEdgeEnds(t, 3, 16<<10, a, b)}
	var errs []<-chan error
	for _, e := range edges {
		e.establishRecv(t, b)
		e.establishSend(t, a, b)
		errs = append(errs, sendObjects(ctx, e, spec, 32, 5000+int(e.edge)))
	}
	for _, e := range edges {
		recvObjects(t, ctx, e, spec, 32, 5000+int(e.edge))
	}
	for _, c := range errs {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if n := a.dials.Load(); n != 1 {
		t.Fatalf("dialled %d times for 3 edges to one peer, want 1", n)
	}
	if err := a.driver.EstablishSend(ctx, SendSpec{Edge: 1, Peer: b.id, Ring: edges[0].pumpOut}); !errors.Is(err, ErrEdgeExists) {
		t.Fatalf("duplicate establish: %v", err)
	}
}

func TestEdgeEOFMidObject(t *testing.T) {
	nodes := newTestNodes(t, 2, 1<<20)
	a, b := nodes[0], nodes[1]
	e := newEdgeEnds(t, 5, 8<<10, a, b)
	e.establishRecv(t, b)
	e.establishSend(t, a, b)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// One whole object, then a header promising 50000 bytes and only 20000.
	w := NewObjectWriter(e.writerRing, 5, ObjectSpec{MaxExtent: 1 << 20, Sequence: SequenceAny}, Identity{}, nil)
	go func() {
		_ = w.Write(ctx, 1, 0, 0, make([]byte, 30000))
		_ = e.writerRing.Write(ctx, rawHeader(ObjectHeader{ObjectID: 2, Sequence: 1, Extent: 50000}, nil))
		_ = e.writerRing.Write(ctx, make([]byte, 20000))
		_ = e.writerRing.Close()
	}()
	r := NewObjectReader(e.readerRing, 5, ObjectSpec{MaxExtent: 1 << 20, Sequence: SequenceContiguous}, Identity{}, nil)
	if _, err := r.Next(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err := r.Next(ctx, nil)
	var oe *ObjectError
	if !errors.As(err, &oe) || oe.Reason != EOFMidObject || oe.Object != 2 {
		t.Fatalf("got %v, want EOFMidObject for object 2", err)
	}
	b.waitEvent(t, StreamClosed, 5)
}

func rssBytes(t testing.TB) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestEdgeBackpressure stalls the receiving runner and checks that the
// sending runner stops after rings plus QUIC windows are full, with bounded
// memory, then resumes losslessly.
func TestEdgeBackpressure(t *testing.T) {
	const (
		ringCap = 256 << 10
		window  = 1 << 20
		object  = 64 << 10
		count   = 2048 // 128 MiB offered
	)
	nodes := newTestNodes(t, 2, window)
	a, b := nodes[0], nodes[1]
	e := newEdgeEnds(t, 9, ringCap, a, b)
	e.establishRecv(t, b)
	e.establishSend(t, a, b)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	spec := ObjectSpec{MaxExtent: object, Sequence: SequenceContiguous}

	rss0 := rssBytes(t)
	var sent atomic.Int64
	errc := make(chan error, 1)
	go func() {
		w := NewObjectWriter(e.writerRing, e.edge, spec, Identity{}, nil)
		buf := make([]byte, object)
		for i := range count {
			fillPattern(buf, uint64(i*object))
			if err := w.Write(ctx, ObjectID(i+1), uint64(i), 0, buf); err != nil {
				errc <- err
				return
			}
			sent.Add(object + ObjectHeaderLen)
		}
		errc <- w.Close()
	}()
	// Wait until the producer has made no progress across several samples.
	var last int64 = -1
	stable := 0
	waitFor(t, func() bool {
		time.Sleep(50 * time.Millisecond)
		n := sent.Load()
		if n == last {
			stable++
		} else {
			stable, last = 0, n
		}
		return stable >= 5
	})
	stalled := sent.Load()
	growth := int64(rssBytes(t)) - int64(rss0)
	// In flight at most: both rings, the stream window, and one object being
	// written plus QUIC's copy of one write.
	bound := int64(2*ringCap + 2*window + 2*(object+ObjectHeaderLen) + 2*ringCap)
	t.Logf("stalled after %d bytes (bound %d); RSS growth %d KiB", stalled, bound, growth>>10)
	if stalled > bound {
		t.Fatalf("producer wrote %d bytes into a stalled edge, bound %d", stalled, bound)
	}
	if growth > 64<<20 {
		t.Fatalf("RSS grew %d MiB while stalled", growth>>20)
	}
	recvObjects(t, ctx, e, spec, count, object)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
