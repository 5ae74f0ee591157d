package dataplane

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func newManager(t *testing.T, ceiling uint64) *ArenaManager {
	t.Helper()
	m := NewArenaManager(ManagerConfig{Memory: make([]byte, ceiling)})
	t.Cleanup(m.Close)
	return m
}

func proofFor(t *testing.T, l Lease) QuiescenceProof {
	t.Helper()
	p, err := ProveQuiescence(PumpStopped{Edge: l.Edge, Ring: l.Layout.RingID}, RingQuiesced{Ring: l.Layout.RingID})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLeaseRejectsImpossibleRequests(t *testing.T) {
	m := newManager(t, 64<<10)
	tests := []struct {
		name string
		spec RingSpec
	}{
		{"larger_than_ceiling", RingSpec{DataCapacity: 64 << 10}},
		{"zero_capacity", RingSpec{DataCapacity: 0}},
		{"unaligned_capacity", RingSpec{DataCapacity: 1000}},
		{"alignment_not_power_of_two", RingSpec{DataCapacity: 4096, Alignment: 48}},
		{"huge_capacity_no_overflow", RingSpec{DataCapacity: ^uint64(0) &^ 63}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Lease(t.Context(), LeaseRequest{Edge: 1, Spec: tt.spec})
			var rej *LeaseRejectedError
			if !errors.As(err, &rej) {
				t.Fatalf("got %v, want *LeaseRejectedError", err)
			}
		})
	}
}

func TestLeaseQueuesReleasesAndCancels(t *testing.T) {
	const ringCap = 16<<10 - RingHeaderLen
	m := newManager(t, 32<<10) // room for exactly two rings
	ctx := t.Context()
	a, err := m.Lease(ctx, LeaseRequest{Edge: 1, Spec: RingSpec{DataCapacity: ringCap}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Lease(ctx, LeaseRequest{Edge: 2, Spec: RingSpec{DataCapacity: ringCap}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Layout.RingID == b.Layout.RingID {
		t.Fatal("ring ids reused")
	}

	// A third request is satisfiable but does not fit now: it queues.
	got := make(chan error, 1)
	var c Lease
	go func() {
		var err error
		c, err = m.Lease(ctx, LeaseRequest{Edge: 3, Spec: RingSpec{DataCapacity: ringCap}})
		got <- err
	}()
	waitFor(t, func() bool { s, _ := m.Stats(ctx); return s.Queued == 1 })

	// A cancelled queued request leaves the queue.
	cctx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	go func() {
		_, err := m.Lease(cctx, LeaseRequest{Edge: 4, Spec: RingSpec{DataCapacity: ringCap}})
		cancelled <- err
	}()
	waitFor(t, func() bool { s, _ := m.Stats(ctx); return s.Queued == 2 })
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled lease: %v", err)
	}
	if s, _ := m.Stats(ctx); s.Queued != 1 {
		t.Fatalf("queued after cancel = %d, want 1", s.Queued)
	}

	if err := m.Release(ctx, QuiescenceProof{}); !errors.Is(err, ErrNoQuiescence) {
		t.Fatalf("release without proof: %v", err)
	}
	if _, err := ProveQuiescence(PumpStopped{Ring: a.Layout.RingID}, RingQuiesced{Ring: b.Layout.RingID}); !errors.Is(err, ErrNoQuiescence) {
		t.Fatalf("mismatched proof: %v", err)
	}
	if err := m.Release(ctx, proofFor(t, a)); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("queued lease: %v", err)
	}
	if c.Layout.ArenaOffset != a.Layout.ArenaOffset {
		t.Fatalf("queued lease at %d, want the released range %d", c.Layout.ArenaOffset, a.Layout.ArenaOffset)
	}
	if err := m.Release(ctx, proofFor(t, a)); !errors.Is(err, ErrUnknownLease) {
		t.Fatalf("double release: %v", err)
	}
	for _, l := range []Lease{b, c} {
		if err := m.Release(ctx, proofFor(t, l)); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := m.Stats(ctx)
	if s.Live != 0 || s.FreeBytes != s.Ceiling {
		t.Fatalf("after releasing all: %+v", s)
	}
}

func TestLeaseShutdownFailsQueued(t *testing.T) {
	m := NewArenaManager(ManagerConfig{Memory: make([]byte, 8<<10)})
	ctx := t.Context()
	if _, err := m.Lease(ctx, LeaseRequest{Spec: RingSpec{DataCapacity: 4 << 10}}); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := m.Lease(ctx, LeaseRequest{Spec: RingSpec{DataCapacity: 6 << 10}})
		got <- err
	}()
	waitFor(t, func() bool { s, _ := m.Stats(ctx); return s.Queued == 1 })
	m.Close()
	if err := <-got; !errors.Is(err, ErrArenaShutdown) {
		t.Fatalf("queued at shutdown: %v", err)
	}
	if _, err := m.Lease(ctx, LeaseRequest{Spec: RingSpec{DataCapacity: 64}}); !errors.Is(err, ErrArenaShutdown) {
		t.Fatalf("lease after shutdown: %v", err)
	}
}

// TestLeaseNeverOverlaps races leasers and releasers and checks that live
// leases never share a byte and every header is initialised.
func TestLeaseNeverOverlaps(t *testing.T) {
	mem := make([]byte, 1<<20)
	m := NewArenaManager(ManagerConfig{Memory: mem})
	t.Cleanup(m.Close)
	var (
		mu   sync.Mutex
		live = map[RingID]Lease{}
	)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 200 {
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				l, err := m.Lease(ctx, LeaseRequest{Edge: EdgeID(w), Spec: RingSpec{DataCapacity: 64 * (1 + rng.Uint64N(2000))}})
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, o := range live {
					if l.Layout.ArenaOffset < o.Layout.ArenaOffset+o.Layout.TotalLen && o.Layout.ArenaOffset < l.Layout.ArenaOffset+l.Layout.TotalLen {
						t.Errorf("lease %+v overlaps %+v", l.Layout, o.Layout)
					}
				}
				live[l.Layout.RingID] = l
				mu.Unlock()
				if _, err := openCore(mem, l.Layout); err != nil {
					t.Error(err)
				}
				mu.Lock()
				delete(live, l.Layout.RingID)
				mu.Unlock()
				if err := m.Release(t.Context(), proofFor(t, l)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// waitFor polls cond with a bound; the only polling the style guide allows.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}
