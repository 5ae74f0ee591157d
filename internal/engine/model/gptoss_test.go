package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// TestGptOssSlidingWindow runs a gpt-oss model whose window (4 positions)
// a 150-token prompt crosses many times over. The even blocks slide, the
// odd ones see everything (llama.cpp's pattern of period 2). A sliding
// block reads its cache only from the first position its queries see
// (rounded down to swaAlign); the logits must be bit for bit those of
// reading from position 0, and one batch must give the bits of one token
// at a time.
func TestGptOssSlidingWindow(t *testing.T) {
	path := smallGptOss(t)
	for _, kc := range []string{tensor.CapNone, tensor.CapGeneric} {
		// The kernels are chosen at load: the best ones pack the experts.
		s, _ := openShard(t, path, whole, Options{Threads: 2, Kernels: kc})
		t.Run(s.Kernels(), func(t *testing.T) {
			slidingWindowExact(t, s, func(b int) int {
				if b%2 == 0 {
					return 4
				}
				return 0
			})
		})
	}
}

// slidingWindowExact checks that block b of s has the window want(b) (0:
// none), and that the logits of a 150-token prompt are bit for bit the
// same in one batch, one token at a time, and reading every block's cache
// from position 0.
func slidingWindowExact(t *testing.T, s *Shard, want func(b int) int) {
	for b := range s.layers {
		if w := s.layers[b].window; w != want(b) {
			t.Fatalf("block %d has window %d; want %d", b, w, want(b))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	prompt := make([]int32, 150)
	for i := range prompt {
		prompt[i] = rng.Int32N(int32(s.Config.NVocab))
	}
	batch := func() []float32 {
		c := s.NewCache(160)
		r, err := s.Forward(c, Batch{Tokens: prompt, AllLogits: true})
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), r.Logits...)
	}
	ref := batch()
	var steps []float32
	c := s.NewCache(160)
	for _, tok := range prompt {
		r, err := s.Forward(c, Batch{Tokens: []int32{tok}})
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, r.Logits...)
	}
	s.swaAlign = 1 << 30 // every block reads from position 0
	fromZero := batch()
	for name, got := range map[string][]float32{"one token at a time": steps, "reading from position 0": fromZero} {
		if len(got) != len(ref) {
			t.Fatalf("%s: %d logits, want %d", name, len(got), len(ref))
		}
		for i := range ref {
			if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
				t.Fatalf("%s: logit %d (position %d) is %v, one batch %v", name, i, i/s.Config.NVocab, got[i], ref[i])
			}
		}
	}
}

// TestGptOssQuantizedCache: a gpt-oss model over a q8_0 and a q4_0 cache
// (whose attention paths apply the window and the sinks as the f16 path
// does) gives the f16 cache's logits up to the cache's rounding over a
// 150-token prompt that crosses the 4-position window many times, and one
// batch gives the bits of one token at a time (decode steps take the
// grouped path). Measured: rms 0.117 (q8_0) and 0.363 (q4_0) against f16;
// the same paths ignoring the window and the sinks give 1.19, so the bounds
// (0.3, 0.6) tell them apart.
func TestGptOssQuantizedCache(t *testing.T) {
	path := smallGptOss(t)
	rng := rand.New(rand.NewPCG(5, 6))
	f16, _ := openShard(t, path, whole, Options{Threads: 2})
	prompt := make([]int32, 150)
	for i := range prompt {
		prompt[i] = rng.Int32N(int32(f16.Config.NVocab))
	}
	run := func(s *Shard, oneByOne bool) []float32 {
		c := s.NewCache(160)
		if !oneByOne {
			r, err := s.Forward(c, Batch{Tokens: prompt, AllLogits: true})
			if err != nil {
				t.Fatal(err)
			}
			return append([]float32(nil), r.Logits...)
		}
		var out []float32
		for _, tok := range prompt {
			r, err := s.Forward(c, Batch{Tokens: []int32{tok}})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r.Logits...)
		}
		return out
	}
	want := run(f16, false)
	for _, tc := range []struct {
		cache string
		rms   float64
	}{{"q8_0", 0.3}, {"q4_0", 0.6}} {
		t.Run(tc.cache, func(t *testing.T) {
			s, _ := openShard(t, path, whole, Options{Threads: 2, CacheType: tc.cache})
			got, steps := run(s, false), run(s, true)
			var sum, worst float64
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(steps[i]) {
					t.Fatalf("logit %d (position %d): one batch %v, one token at a time %v", i, i/s.Config.NVocab, got[i], steps[i])
				}
				d := float64(got[i] - want[i])
				sum += d * d
				worst = max(worst, math.Abs(d))
			}
			rms := math.Sqrt(sum / float64(len(want)))
			t.Logf("%s cache against f16: rms %.3g, max %.3g", tc.cache, rms, worst)
			if rms > tc.rms {
				t.Fatalf("%s cache against f16: rms %.3g > %.3g", tc.cache, rms, tc.rms)
			}
		})
	}
}
