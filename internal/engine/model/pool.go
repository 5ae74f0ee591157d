package model

import "sync"

// pool is a fixed set of worker goroutines that split loops into ranges.
// The caller's goroutine runs the first range itself, so a one-thread pool
// starts no goroutines.
type pool struct {
	n     int
	tasks chan task
	stop  sync.Once
}

type task struct {
	fn     func(lo, hi int)
	lo, hi int
	wg     *sync.WaitGroup
}

func newPool(n int) *pool {
	p := &pool{n: n, tasks: make(chan task, n)}
	for i := 1; i < n; i++ {
		go func() {
			for t := range p.tasks {
				t.fn(t.lo, t.hi)
				t.wg.Done()
			}
		}()
	}
	return p
}

// minParallelWork is the work (in multiply-adds) below which handing a loop
// to other goroutines costs more than it saves.
const minParallelWork = 1 << 15

// run calls fn over [0, n) split into at most p.n contiguous ranges and
// returns when all are done. Ranges are aligned to grain. work estimates the
// whole loop's cost; small loops run on the caller's goroutine.
func (p *pool) run(n, grain, work int, fn func(lo, hi int)) {
	parts := p.n
	if work < minParallelWork {
		parts = 1
	}
	if grain < 1 {
		grain = 1
	}
	if max := (n + grain - 1) / grain; parts > max {
		parts = max
	}
	if parts <= 1 {
		fn(0, n)
		return
	}
	per := ((n+parts-1)/parts + grain - 1) / grain * grain
	var wg sync.WaitGroup
	for lo := per; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Add(1)
		p.tasks <- task{fn, lo, hi, &wg}
	}
	fn(0, min(per, n))
	wg.Wait()
}

func (p *pool) close() { p.stop.Do(func() { close(p.tasks) }) }
