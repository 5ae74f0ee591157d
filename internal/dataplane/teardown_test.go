//go:build linux

package dataplane

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// runnerRings is the test's runner side: a reader goroutine per installed
// ring that UninstallRing stops and waits for before reporting quiescence.
type runnerRings struct {
	fence *Fence
	mu    sync.Mutex
	stops map[RingID]func()
}

func (r *runnerRings) UninstallRing(ctx context.Context, h RingHandle) (RingQuiesced, error) {
	if err := r.fence.Check(h); err != nil {
		return RingQuiesced{}, err
	}
	r.mu.Lock()
	stop := r.stops[h.Ring]
	delete(r.stops, h.Ring)
	r.mu.Unlock()
	if stop != nil {
		stop() // returns once the reader goroutine no longer touches the ring
	}
	return r.fence.Uninstall(h)
}

// TestTeardownReleasesEveryLease provisions edges from a leased arena,
// streams through them, tears each down in spec order and checks the arena
// is whole again and the events carry identities.
func TestTeardownReleasesEveryLease(t *testing.T) {
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	nodes := newTestNodes(t, 2, 1<<20)
	a, b := nodes[0], nodes[1]
	arena, err := NewArena("teardown", 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arena.Close() })
	id := Identity{Run: "run-7", Node: b.id}
	m := NewArenaManager(ManagerConfig{Memory: arena.Bytes(), Identity: id, Logger: logger})
	t.Cleanup(m.Close)
	runner := &runnerRings{fence: NewFence(), stops: map[RingID]func(){}}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	spec := ObjectSpec{MaxExtent: 1 << 16, Sequence: SequenceContiguous}

	type edge struct {
		id     EdgeID
		handle RingHandle
	}
	var edges []edge
	for i := range 4 {
		eid := EdgeID(100 + i)
		lease, err := m.Lease(ctx, LeaseRequest{Edge: eid, Spec: RingSpec{DataCapacity: 64 << 10, Direction: Ingress}})
		if err != nil {
			t.Fatal(err)
		}
		rd, wr := newDoorbells(t)
		pumpIn, err := OpenProducer(arena.Bytes(), lease.Layout, rd, wr)
		if err != nil {
			t.Fatal(err)
		}
		readerRing, err := OpenConsumer(arena.Bytes(), lease.Layout, rd, wr)
		if err != nil {
			t.Fatal(err)
		}
		h := runner.fence.Install(lease.Layout.RingID)
		rctx, rcancel := context.WithCancel(ctx)
		loaded := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			r := NewObjectReader(readerRing, eid, spec, id, logger)
			for n := 0; ; n++ {
				if _, err := r.Next(rctx, nil); err != nil {
					return
				}
				if n == 9 {
					close(loaded)
				}
			}
		}()
		runner.stops[h.Ring] = func() { rcancel(); <-done }
		if err := b.driver.EstablishRecv(ctx, RecvSpec{Edge: eid, Ring: pumpIn}); err != nil {
			t.Fatal(err)
		}
		e := newEdgeEnds(t, eid, 16<<10, a, b)
		e.establishSend(t, a, b)
		wctx, wcancel := context.WithCancel(ctx)
		wdone := make(chan struct{})
		go func() { // keeps sending until teardown cuts the edge
			defer close(wdone)
			w := NewObjectWriter(e.writerRing, eid, spec, Identity{}, nil)
			for s := uint64(0); w.Write(wctx, ObjectID(s+1), s, 0, make([]byte, 4000)) == nil; s++ {
			}
		}()
		t.Cleanup(func() { wcancel(); <-wdone })
		select {
		case <-loaded:
		case <-ctx.Done():
			t.Fatal("edge never delivered")
		}
		edges = append(edges, edge{eid, h})
	}
	if s, _ := m.Stats(ctx); s.Live != 4 {
		t.Fatalf("live leases %d, want 4", s.Live)
	}
	td := Teardown{Driver: b.driver, Runner: runner, Arena: m, Identity: id, Logger: logger}
	for _, e := range edges {
		if err := td.StopEdge(ctx, e.id, e.handle); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := m.Stats(ctx)
	if s.Live != 0 || s.FreeBytes != s.Ceiling {
		t.Fatalf("after teardown: %+v", s)
	}
	if st, _ := b.driver.Stats(ctx); st.Pumps != 0 {
		t.Fatalf("pumps left: %+v", st)
	}
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	for _, want := range []string{`"event":"ring_leased"`, `"event":"object_loaded"`, `"event":"ring_quiesced"`, `"event":"ring_released"`, `"event":"edge_stopped"`, `"run_id":"run-7"`, `"node_id":"node-b"`, `"object_id":`, `"sequence":`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s", want)
		}
	}
}

func TestFenceRejectsOldGeneration(t *testing.T) {
	f := NewFence()
	h := f.Install(3)
	if err := f.Check(h); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Reaped(h); !errors.Is(err, ErrNoQuiescence) {
		t.Fatalf("reaping a live generation: %v", err)
	}
	f.Restart()
	tests := []struct {
		name string
		call func() error
	}{
		{"check", func() error { return f.Check(h) }},
		{"uninstall", func() error { _, err := f.Uninstall(h); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, ErrStaleGeneration) {
				t.Fatalf("got %v, want ErrStaleGeneration", err)
			}
		})
	}
	q, err := f.Reaped(h)
	if err != nil || q.Ring != 3 || q.Generation != 1 {
		t.Fatalf("reaped = %+v, %v", q, err)
	}
	h2 := f.Install(3)
	if err := f.Check(h2); err != nil || h2.Generation != 2 {
		t.Fatalf("reinstalled handle %+v: %v", h2, err)
	}
}

func newDoorbells(t testing.TB) (*Doorbell, *Doorbell) {
	t.Helper()
	rd, err := NewDoorbell()
	if err != nil {
		t.Fatal(err)
	}
	wr, err := NewDoorbell()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close(); wr.Close() })
	return rd, wr
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
