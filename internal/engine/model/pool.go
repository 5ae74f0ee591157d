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

// pool is a fixed set of worker goroutines that run one job at a time. A
// job's items are handed out in chunks through one atomic word, so only the
// goroutines that claimed a chunk hold the job up: a worker the OS has not
// scheduled costs nothing, and the caller, which works too, finishes the job
// alone if need be. A one-thread pool starts no goroutines.
//
// Between jobs the workers spin for spinFor, then park on a condition
// variable: back-to-back jobs (the matmuls of one forward pass) start in
// well under a microsecond, and an idle pool uses no CPU.
type pool struct {
	// Immutable after newPool.
	n    int           // threads, the caller's included
	spin time.Duration // how long idle workers and a waiting caller poll

	runMu sync.Mutex // held by run: one job at a time

	// The current job; written by run before it publishes the job's state,
	// read by a worker only after it claimed a chunk of that job (so never
	// while run rewrites them: run waits for every claimed chunk).
	cur   job
	items int
	grain int

	// state is gen<<genShift | chunks<<chunkShift | next: the job's
	// generation, its number of chunks and the next unclaimed chunk.
	state    atomic.Uint64
	finished atomic.Int64 // chunks of the current job done
	sleepers atomic.Int32 // workers parked (or about to park) on wake
	closed   atomic.Bool

	mu   sync.Mutex // the lock of the two conditions
	wake *sync.Cond // workers park here between jobs
	done *sync.Cond // the caller parks here until finished is all chunks
	wg   sync.WaitGroup
}

const (
	chunkBits  = 20
	chunkMask  = 1<<chunkBits - 1
	chunkShift = chunkBits
	genShift   = 2 * chunkBits
	maxChunks  = chunkMask
)

// spinFor is how long an idle worker, or a caller waiting for workers,
// polls before it parks: longer than the serial work between the jobs of a
// forward pass, short enough that an idle shard soon stops using CPU.
const spinFor = 100 * time.Microsecond

// newPool starts n-1 workers whose idle polling lasts spin before they park.
func newPool(n int, spin time.Duration) *pool {
	p := &pool{n: max(n, 1), spin: spin}
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
	grain = max(grain, 1, (items+maxChunks-1)/maxChunks)
	if p.n == 1 || work < minParallelWork || items <= grain {
		j.do(0, 0, items)
		return
	}
	chunks := (items + grain - 1) / grain
	p.runMu.Lock()
	defer p.runMu.Unlock()
	p.cur, p.items, p.grain = j, items, grain
	p.finished.Store(0)
	gen := p.state.Load()>>genShift + 1
	st := gen<<genShift | uint64(chunks)<<chunkShift
	p.state.Store(st)
	if p.sleepers.Load() > 0 {
		p.mu.Lock()
		p.wake.Broadcast()
		p.mu.Unlock()
	}
	p.claim(0, st)
	if !spinUntil(p.spin, func() bool { return p.finished.Load() == int64(chunks) }) {
		p.mu.Lock()
		for p.finished.Load() != int64(chunks) {
			p.done.Wait()
		}
		p.mu.Unlock()
	}
	p.cur = nil
}

// claim runs chunks of the job whose state was seen as st until none is
// left or another job has replaced it.
func (p *pool) claim(w int, st uint64) {
	gen := st >> genShift
	for {
		chunks := st >> chunkShift & chunkMask
		next := st & chunkMask
		if next >= chunks {
			return
		}
		if !p.state.CompareAndSwap(st, st+1) {
			st = p.state.Load()
			if st>>genShift != gen {
				return
			}
			continue
		}
		lo := int(next) * p.grain
		p.cur.do(w, lo, min(lo+p.grain, p.items))
		if p.finished.Add(1) == int64(chunks) && w != 0 {
			p.mu.Lock()
			p.done.Broadcast()
			p.mu.Unlock()
		}
		st++
	}
}

func (p *pool) worker(w int) {
	var seen uint64 // the generation last worked on
	for {
		if !spinUntil(p.spin, func() bool { return p.state.Load()>>genShift != seen || p.closed.Load() }) {
			p.mu.Lock()
			p.sleepers.Add(1)
			for p.state.Load()>>genShift == seen && !p.closed.Load() {
				p.wake.Wait()
			}
			p.sleepers.Add(-1)
			p.mu.Unlock()
		}
		if p.closed.Load() {
			return
		}
		st := p.state.Load()
		seen = st >> genShift
		p.claim(w, st)
	}
}

// spinUntil polls cond for up to d, yielding the processor now and then,
// and reports whether cond became true.
func spinUntil(d time.Duration, cond func() bool) bool {
	var start time.Time
	for i := 0; ; i++ {
		if cond() {
			return true
		}
		if d <= 0 {
			return false
		}
		if i&255 == 255 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > d {
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
