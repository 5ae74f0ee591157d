package model

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// job is one parallel loop: do runs items [lo, hi) on worker w (0 is the
// calling goroutine, 1..n-1 the pool's). Jobs are structs kept in a Cache's
// arena and passed by pointer, so starting one allocates nothing.
type job interface {
	do(w, lo, hi int)
}

// pool is a fixed set of worker goroutines that run one job at a time. The
// items of a job are claimed in chunks through an atomic counter, so a
// worker that the OS delays costs only its current chunk. The caller's
// goroutine works too, so a one-thread pool starts no goroutines.
//
// Between jobs the workers spin for spinFor, then park on a condition
// variable: back-to-back jobs (the matmuls of one forward pass) start in
// well under a microsecond, and an idle pool uses no CPU.
type pool struct {
	// Immutable after newPool.
	n int // threads, the caller's included

	runMu sync.Mutex // held by run: one job at a time

	// The current job; written by run before it bumps gen, read by
	// workers after they see the new gen.
	cur          job
	items, grain int

	next     atomic.Int64  // first unclaimed item of the current job
	gen      atomic.Uint64 // bumped once per job handed to the workers
	pending  atomic.Int32  // workers not yet finished with the current gen
	sleepers atomic.Int32  // workers parked (or about to park) on wake
	closed   atomic.Bool

	mu   sync.Mutex // guards the two conditions' waits
	wake *sync.Cond // workers park here between jobs
	done *sync.Cond // the caller parks here until pending is 0
	wg   sync.WaitGroup
}

// spinFor is how long an idle worker, or a caller waiting for workers,
// polls before it parks.
const spinFor = 100 * time.Microsecond

func newPool(n int) *pool {
	p := &pool{n: max(n, 1)}
	p.wake = sync.NewCond(&p.mu)
	p.done = sync.NewCond(&p.mu)
	for w := 1; w < p.n; w++ {
		p.wg.Go(func() { p.worker(w) })
	}
	return p
}

// minParallelWork is the work (in multiply-adds) below which handing a loop
// to other goroutines costs more than it saves.
const minParallelWork = 1 << 14

// run calls j.do over [0, items) in chunks of grain items and returns when
// all are done. work estimates the whole loop's cost; small loops run on
// the caller's goroutine without waking anyone.
func (p *pool) run(j job, items, grain, work int) {
	grain = max(grain, 1)
	if p.n == 1 || work < minParallelWork || items <= grain {
		j.do(0, 0, items)
		return
	}
	p.runMu.Lock()
	defer p.runMu.Unlock()
	p.cur, p.items, p.grain = j, items, grain
	p.next.Store(0)
	p.pending.Store(int32(p.n - 1))
	p.gen.Add(1)
	if p.sleepers.Load() > 0 {
		p.mu.Lock()
		p.wake.Broadcast()
		p.mu.Unlock()
	}
	p.claim(0)
	p.waitDone()
	p.cur = nil
}

// claim runs chunks of the current job until none is left.
func (p *pool) claim(w int) {
	j, items, grain := p.cur, int64(p.items), int64(p.grain)
	for {
		lo := p.next.Add(grain) - grain
		if lo >= items {
			return
		}
		j.do(w, int(lo), int(min(lo+grain, items)))
	}
}

func (p *pool) waitDone() {
	if spinUntil(func() bool { return p.pending.Load() == 0 }) {
		return
	}
	p.mu.Lock()
	for p.pending.Load() != 0 {
		p.done.Wait()
	}
	p.mu.Unlock()
}

func (p *pool) worker(w int) {
	var seen uint64
	for {
		if !spinUntil(func() bool { return p.gen.Load() != seen || p.closed.Load() }) {
			p.mu.Lock()
			p.sleepers.Add(1)
			for p.gen.Load() == seen && !p.closed.Load() {
				p.wake.Wait()
			}
			p.sleepers.Add(-1)
			p.mu.Unlock()
		}
		if p.closed.Load() {
			return
		}
		seen = p.gen.Load()
		p.claim(w)
		if p.pending.Add(-1) == 0 {
			p.mu.Lock()
			p.done.Broadcast()
			p.mu.Unlock()
		}
	}
}

// spinUntil polls cond for up to spinFor, yielding the processor now and
// then, and reports whether cond became true.
func spinUntil(cond func() bool) bool {
	var start time.Time
	for i := 0; ; i++ {
		if cond() {
			return true
		}
		if i&255 == 255 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > spinFor {
				return false
			}
			runtime.Gosched()
		}
	}
}

// close stops the workers and waits for them to exit.
func (p *pool) close() {
	p.closed.Store(true)
	p.mu.Lock()
	p.wake.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}
