package runner

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/model"
)

// TestStepperBatches decodes four sequences from four goroutines through
// one stepper: every step takes all four (the gather wait is long enough
// that none is left out on a slow machine), and each sequence's logits
// are bit for bit those of decoding it alone with Forward. A goroutine
// that leaves early shrinks the later steps.
func TestStepperBatches(t *testing.T) {
	m, err := engine.Open(modelPath(t), engine.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	nv := m.Config.NVocab
	const seqs = 4
	steps := [seqs]int{8, 8, 8, 3} // the last sequence leaves after 3
	prompts := [seqs][]int32{{1, 400}, {1, 401, 402}, {1, 403}, {1, 404, 405, 406}}
	token := func(i, k int) int32 { return int32(10 + 37*i + 11*k) }

	want := make([][][]float32, seqs)
	for i := range seqs {
		c := m.Shard.NewCache(32)
		if _, err := m.Shard.Forward(c, model.Batch{Tokens: prompts[i]}); err != nil {
			t.Fatal(err)
		}
		for k := range steps[i] {
			r, err := m.Shard.Forward(c, model.Batch{Tokens: []int32{token(i, k)}})
			if err != nil {
				t.Fatal(err)
			}
			want[i] = append(want[i], slices.Clone(r.Logits))
		}
	}

	var mu sync.Mutex
	var sizes []int
	s := newStepper(m.Shard, 10*time.Second, func(n int) {
		mu.Lock()
		sizes = append(sizes, n)
		mu.Unlock()
	})
	t.Cleanup(s.close)
	decs := make([]*decoder, seqs)
	caches := make([]*model.Cache, seqs)
	for i := range seqs {
		caches[i] = m.Shard.NewCache(32)
		if _, err := m.Shard.Forward(caches[i], model.Batch{Tokens: prompts[i]}); err != nil {
			t.Fatal(err)
		}
		decs[i] = s.join(nv)
	}
	errs := make([]error, seqs)
	var wg sync.WaitGroup
	for i := range seqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer decs[i].leave()
			for k := range steps[i] {
				logits, err := decs[i].step(caches[i], token(i, k))
				if err != nil {
					errs[i] = err
					return
				}
				for v := range logits {
					if math.Float32bits(logits[v]) != math.Float32bits(want[i][k][v]) {
						errs[i] = fmt.Errorf("sequence %d step %d: logit %d is %v in a batch, %v alone", i, k, v, logits[v], want[i][k][v])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if wantSizes := []int{4, 4, 4, 3, 3, 3, 3, 3}; !slices.Equal(sizes, wantSizes) {
		t.Fatalf("step sizes %v, want %v", sizes, wantSizes)
	}
}

// TestStepperStops: steps asked of a closed stepper fail with
// errStepperStopped instead of blocking.
func TestStepperStops(t *testing.T) {
	m, err := engine.Open(modelPath(t), engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s := newStepper(m.Shard, stepGather, nil)
	d := s.join(m.Config.NVocab)
	s.close()
	if _, err := d.step(m.Shard.NewCache(4), 1); err != errStepperStopped {
		t.Fatalf("a step after close: %v, want errStepperStopped", err)
	}
	d.leave()
	if d2 := s.join(m.Config.NVocab); d2.joined {
		t.Fatal("joined a closed stepper")
	}
}

// TestStepperIsolatesFailures: when one sequence of a step cannot take its
// token (its cache is full), only that sequence fails; the others get the
// logits they would get alone.
func TestStepperIsolatesFailures(t *testing.T) {
	m, err := engine.Open(modelPath(t), engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	alone := m.Shard.NewCache(8)
	m.Shard.Forward(alone, model.Batch{Tokens: []int32{1, 400}})
	want, err := m.Shard.Forward(alone, model.Batch{Tokens: []int32{77}})
	if err != nil {
		t.Fatal(err)
	}
	good, full := m.Shard.NewCache(8), m.Shard.NewCache(2)
	m.Shard.Forward(good, model.Batch{Tokens: []int32{1, 400}})
	m.Shard.Forward(full, model.Batch{Tokens: []int32{1, 401}})

	s := newStepper(m.Shard, 10*time.Second, nil)
	t.Cleanup(s.close)
	dg, df := s.join(m.Config.NVocab), s.join(m.Config.NVocab)
	var wg sync.WaitGroup
	var gotGood []float32
	var errGood, errFull error
	wg.Add(2)
	go func() { defer wg.Done(); gotGood, errGood = dg.step(good, 77) }()
	go func() { defer wg.Done(); _, errFull = df.step(full, 78) }()
	wg.Wait()
	var cacheFull *model.ErrCacheFull
	if !errors.As(errFull, &cacheFull) {
		t.Fatalf("the full sequence's step: %v, want *model.ErrCacheFull", errFull)
	}
	if errGood != nil || !slices.Equal(gotGood, want.Logits) {
		t.Fatalf("the other sequence's step: %v (logits equal alone: %v)", errGood, slices.Equal(gotGood, want.Logits))
	}
}
