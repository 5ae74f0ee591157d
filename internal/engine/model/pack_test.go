package model

import (
	"math"
	"testing"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// TestPackedWeights loads the small Q8_0 dense and gpt-oss (MXFP4
// experts) models packed and with NoPack: packed, every matrix the kernels
// pack is packed but the token embeddings (and a head tied to them), which
// are read by the row;
// NoPack packs nothing; both read the same weight bytes, and their logits
// agree to float rounding (the packed kernels sum in another order).
func TestPackedWeights(t *testing.T) {
	if tensor.Best().PackRows(tensor.Q8_0) == 0 {
		t.Skipf("the %s kernels pack nothing (only AVX2 does)", tensor.Best().Name())
	}
	for _, c := range []smallCase{
		{"Q8_0", func(t *testing.T) string { return smallModel(t, tensor.Q8_0) }},
		{"gpt-oss-MXFP4_MOE", smallGptOss},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.file(t)
			packed, _ := openShard(t, path, whole, Options{Threads: 2})
			plain, _ := openShard(t, path, whole, Options{Threads: 2, NoPack: true})
			n := 0
			for _, m := range packed.matrices() {
				if m == nil {
					continue
				}
				want := packed.k.PackRows(m.typ) > 0 && m.name != "token_embd.weight" && m.rows%8 == 0
				if (m.packed > 0) != want {
					t.Errorf("%s (%s, %d rows): packed %d", m.name, m.typ, m.rows, m.packed)
				}
				if m.packed > 0 {
					n++
				}
			}
			for _, m := range plain.matrices() {
				if m != nil && m.packed > 0 {
					t.Errorf("NoPack packed %s", m.name)
				}
			}
			if n == 0 {
				t.Fatal("nothing was packed: the check above saw nothing")
			}
			if a, b := packed.WeightBytes(), plain.WeightBytes(); a != b {
				t.Errorf("weight bytes %d packed, %d as stored", a, b)
			}
			prompt := []int32{1, 5, 9, 200, 31, 7}
			la, lb := logitsOf(t, packed, prompt), logitsOf(t, plain, prompt)
			var worst float64
			for i := range la {
				worst = max(worst, math.Abs(float64(la[i]-lb[i])))
			}
			if worst > 1e-2 {
				t.Errorf("logits differ by up to %g packed and as stored", worst)
			}
		})
	}
}

func logitsOf(t *testing.T, s *Shard, prompt []int32) []float32 {
	t.Helper()
	c := s.NewCache(len(prompt))
	r, err := s.Forward(c, Batch{Tokens: prompt, AllLogits: true})
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), r.Logits...)
}
