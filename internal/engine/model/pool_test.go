package model

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// countJob counts how often each item ran and checks worker ids.
type countJob struct {
	t       *testing.T
	threads int
	seen    []atomic.Int32
}

func (j *countJob) do(w, lo, hi int) {
	if w < 0 || w >= j.threads {
		j.t.Errorf("worker id %d outside [0, %d)", w, j.threads)
	}
	for i := lo; i < hi; i++ {
		j.seen[i].Add(1)
	}
}

func TestPoolRunsEveryItemOnce(t *testing.T) {
	tests := []struct {
		name                string
		threads, items, grn int
		work                int
	}{
		{"one thread", 1, 100, 3, 1 << 30},
		{"small work runs inline", 4, 100, 3, 10},
		{"grain larger than items", 3, 5, 8, 1 << 30},
		{"uneven chunks", 3, 1001, 7, 1 << 30},
		{"one item per chunk", 4, 257, 1, 1 << 30},
		{"many chunks", 2, 1 << 21, 1, 1 << 30},
	}
	for _, tt := range tests {
		for _, mode := range []struct {
			name string
			spin time.Duration
		}{{"spinning", spinFor}, {"parking", 0}} {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				runEveryItemOnce(t, newPool(tt.threads, mode.spin), tt.threads, tt.items, tt.grn, tt.work)
			})
		}
	}
}

func runEveryItemOnce(t *testing.T, p *pool, threads, items, grain, work int) {
	defer p.close()
	for round := 0; round < 3; round++ {
		j := &countJob{t: t, threads: threads, seen: make([]atomic.Int32, items)}
		p.run(j, items, grain, work)
		for i := range j.seen {
			if n := j.seen[i].Load(); n != 1 {
				t.Fatalf("round %d: item %d ran %d times", round, i, n)
			}
		}
	}
}

// TestPoolParkedWorkersWake runs a pool whose workers and caller park at
// once instead of spinning, so every job goes through the wake-ups.
func TestPoolParkedWorkersWake(t *testing.T) {
	p := newPool(3, 0)
	defer p.close()
	for round := 0; round < 200; round++ {
		j := &countJob{t: t, threads: 3, seen: make([]atomic.Int32, 64)}
		p.run(j, 64, 1, 1<<30)
		for i := range j.seen {
			if n := j.seen[i].Load(); n != 1 {
				t.Fatalf("item %d ran %d times", i, n)
			}
		}
	}
}

func TestPoolCloseStopsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	p := newPool(4, spinFor)
	p.run(&countJob{t: t, threads: 4, seen: make([]atomic.Int32, 16)}, 16, 1, 1<<30)
	p.close()
	// close waited for every worker's function to return; the goroutines
	// themselves exit right after.
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines after close, %d before newPool", after, before)
	}
}

// TestConcurrentForward runs two sequences through one shard at once; each
// must get the logits it gets alone.
func TestConcurrentForward(t *testing.T) {
	s, _ := openShard(t, smallModel(t, tensor.Q8_0), whole, Options{Threads: 2})
	prompts := [][]int32{{1, 2, 3, 4, 5, 6, 7, 8}, {9, 8, 7, 6, 5}}
	run := func(prompt []int32) []float32 {
		c := s.NewCache(64)
		var out []float32
		r, err := s.Forward(c, Batch{Tokens: prompt, AllLogits: true})
		if err != nil {
			t.Error(err)
			return nil
		}
		out = append(out, r.Logits...)
		for k := 0; k < 20; k++ {
			if r, err = s.Forward(c, Batch{Tokens: []int32{argmax(r.Logits[len(r.Logits)-s.Config.NVocab:])}}); err != nil {
				t.Error(err)
				return nil
			}
			out = append(out, r.Logits...)
		}
		return out
	}
	want := [][]float32{run(prompts[0]), run(prompts[1])}
	got := make([][]float32, 2)
	var wg sync.WaitGroup
	for i := range prompts {
		wg.Go(func() { got[i] = run(prompts[i]) })
	}
	wg.Wait()
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("sequence %d: %d logits, alone %d", i, len(got[i]), len(want[i]))
		}
		for k := range want[i] {
			if math.Float32bits(got[i][k]) != math.Float32bits(want[i][k]) {
				t.Fatalf("sequence %d: logit %d is %v run concurrently, %v alone", i, k, got[i][k], want[i][k])
			}
		}
	}
}
