package dataplane

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// RingHandle names a ring installed in one runner generation.
type RingHandle struct {
	Ring       RingID
	Generation Generation
}

// Fence tracks which runner generation is current and which rings it has
// installed. A runner restart starts a new generation: every handle of the
// old one is invalid, and its rings are quiescent because the process that
// touched them is gone.
type Fence struct {
	mu    sync.Mutex
	gen   Generation            // guarded by mu
	rings map[RingID]Generation // guarded by mu
}

// NewFence starts at generation 1.
func NewFence() *Fence { return &Fence{gen: 1, rings: make(map[RingID]Generation)} }

// Install records ring as installed in the current generation.
func (f *Fence) Install(ring RingID) RingHandle {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rings[ring] = f.gen
	return RingHandle{Ring: ring, Generation: f.gen}
}

// Check rejects a handle from an earlier generation or an uninstalled ring.
func (f *Fence) Check(h RingHandle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h.Generation != f.gen {
		return fmt.Errorf("%w: ring %d of generation %d, current %d", ErrStaleGeneration, h.Ring, h.Generation, f.gen)
	}
	if g, ok := f.rings[h.Ring]; !ok || g != h.Generation {
		return fmt.Errorf("%w: ring %d not installed", ErrStaleGeneration, h.Ring)
	}
	return nil
}

// Restart begins a new generation after the runner process was reaped.
func (f *Fence) Restart() Generation {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	return f.gen
}

// Uninstall removes a ring after the runner reported it quiesced.
func (f *Fence) Uninstall(h RingHandle) (RingQuiesced, error) {
	if err := f.Check(h); err != nil {
		return RingQuiesced{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.rings, h.Ring)
	return RingQuiesced{Ring: h.Ring, Generation: h.Generation}, nil
}

// Reaped proves an old generation's ring quiescent: its process is gone.
func (f *Fence) Reaped(h RingHandle) (RingQuiesced, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h.Generation >= f.gen {
		return RingQuiesced{}, fmt.Errorf("%w: generation %d is still live", ErrNoQuiescence, h.Generation)
	}
	delete(f.rings, h.Ring)
	return RingQuiesced{Ring: h.Ring, Generation: h.Generation}, nil
}

// RingUninstaller asks the runner to stop using a ring and waits until it
// has (UninstallRing -> RingQuiesced in spec §31).
type RingUninstaller interface {
	UninstallRing(ctx context.Context, h RingHandle) (RingQuiesced, error)
}

// Teardown runs the edge teardown sequence of spec §38 in order: stop the
// pump, uninstall the runner's ring, and release the arena lease on the
// proof of both. A failed step stops the sequence so that memory a live
// party may still touch is never released.
type Teardown struct {
	Driver   *Driver
	Runner   RingUninstaller
	Arena    *ArenaManager
	Identity Identity
	Logger   *slog.Logger
}

// StopEdge tears down one edge whose ring is h.
func (t Teardown) StopEdge(ctx context.Context, edge EdgeID, h RingHandle) error {
	obs := newObserver(t.Logger, t.Identity)
	ps, err := t.Driver.StopEdge(ctx, edge)
	if err != nil {
		return fmt.Errorf("dataplane: teardown edge %d: stop pump: %w", edge, err)
	}
	rq, err := t.Runner.UninstallRing(ctx, h)
	if err != nil {
		return fmt.Errorf("dataplane: teardown edge %d: uninstall ring %d: %w", edge, h.Ring, err)
	}
	obs.emit(slog.LevelInfo, EventRingQuiesced, edgeAttr(edge), ringAttr(rq.Ring), slog.Uint64("worker_generation", uint64(rq.Generation)))
	proof, err := ProveQuiescence(ps, rq)
	if err != nil {
		return fmt.Errorf("dataplane: teardown edge %d: %w", edge, err)
	}
	if err := t.Arena.Release(ctx, proof); err != nil {
		return fmt.Errorf("dataplane: teardown edge %d: release ring %d: %w", edge, h.Ring, err)
	}
	obs.emit(slog.LevelInfo, EventEdgeStopped, edgeAttr(edge), ringAttr(h.Ring))
	return nil
}
