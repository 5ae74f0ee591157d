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
	for _, k := range []tensor.Kernels{tensor.Best(), tensor.Generic()} {
		t.Run(k.Name(), func(t *testing.T) {
			s, _ := openShard(t, path, whole, Options{Threads: 2})
			s.k = k
			slidingWindowExact(t, s)
		})
	}
}

func slidingWindowExact(t *testing.T, s *Shard) {
	for b := range s.layers {
		if w := s.layers[b].oai.window; (w == 4) != (b%2 == 0) || (w != 0 && w != 4) {
			t.Fatalf("block %d has window %d; want 4 on the even blocks, none on the odd", b, w)
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
	want := batch()
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
		if len(got) != len(want) {
			t.Fatalf("%s: %d logits, want %d", name, len(got), len(want))
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: logit %d (position %d) is %v, one batch %v", name, i, i/s.Config.NVocab, got[i], want[i])
			}
		}
	}
}
