package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// TestStepRowsBitIdentical reads three prompts in chunks of random sizes,
// each chunk in one pass with other sequences' chunks and decode steps,
// and checks every sequence's logits after each of its passes, and its
// keys and values at the end, against the same sequence run alone with
// Forward. A fourth sequence takes its prompt's first part from another
// cache with CopyPrefix and must then match too.
func TestStepRowsBitIdentical(t *testing.T) {
	// A quantized cache needs heads of whole 32-element blocks.
	wideHeads := func(t *testing.T, typ tensor.Type) string {
		return synthFile(t, synth.Shape{Name: "small32", Arch: "llama", NEmbd: 128, NLayer: 2, NHead: 4, NHeadKV: 2,
			NFF: 256, NVocab: 300, RopeBase: 10000, CtxLen: 2048}, typ)
	}
	// Mixture of experts, and latent attention (keys and values of
	// different widths).
	mla := func(t *testing.T, typ tensor.Type) string {
		return synthFile(t, synth.ArchShapes()["deepseek2"], typ)
	}
	// Sliding-window blocks with their own rope between global ones:
	// the prompts cross the window of 8 many times over.
	gemma := func(t *testing.T, typ tensor.Type) string {
		return synthFile(t, synth.ArchShapes()["gemma3"], typ)
	}
	// A query temperature by position: the prompts cross its floor of
	// 16 up to four times.
	mistral := func(t *testing.T, typ tensor.Type) string {
		return synthFile(t, synth.ArchShapes()["mistral3"], typ)
	}
	for _, tc := range []struct {
		name  string
		typ   tensor.Type
		cache string
		model func(*testing.T, tensor.Type) string
	}{
		{"", tensor.F32, "", smallModel}, {"", tensor.Q8_0, "", smallModel},
		{"", tensor.Q8_0, "q8_0", wideHeads}, {"", tensor.Q8_0, "q4_0", wideHeads},
		{"qwen3moe-", tensor.Q8_0, "q4_0", smallMoE},
		{"deepseek2-", tensor.Q8_0, "", mla}, {"deepseek2-", tensor.Q8_0, "q8_0", mla},
		{"gemma3-", tensor.Q8_0, "", gemma}, {"gemma3-", tensor.Q8_0, "q8_0", gemma},
		{"mistral3-", tensor.Q8_0, "", mistral}, {"mistral3-", tensor.Q8_0, "q8_0", mistral},
		// Chunks of 8 (smallLlama4), which the prompts cross many
		// times, a no-rope block with the attention temperature, whose
		// floor of 8 they cross too.
		{"llama4-", tensor.Q8_0, "", func(t *testing.T, _ tensor.Type) string { return smallLlama4(t) }},
		{"llama4-", tensor.Q8_0, "q8_0", func(t *testing.T, _ tensor.Type) string { return smallLlama4(t) }},
	} {
		typ := tc.typ
		t.Run(tc.name+typ.String()+"/cache="+tc.cache, func(t *testing.T) {
			s, _ := openShard(t, tc.model(t, typ), whole, Options{Threads: 2, CacheType: tc.cache})
			rng := rand.New(rand.NewPCG(3, 4))
			const seqs = 4
			toks := make([][]int32, seqs) // prompt then decode tokens, fed in order
			for i := range toks {
				toks[i] = make([]int32, 20+rng.IntN(60))
				for j := range toks[i] {
					toks[i][j] = rng.Int32N(300)
				}
			}
			copy(toks[3], toks[0][:15]) // sequence 3 shares 15 tokens with 0
			// Alone: the logits after every position, and the caches.
			alone := make([]*Cache, seqs)
			want := make([][][]float32, seqs)
			for i := range toks {
				alone[i] = s.NewCache(128)
				for _, tok := range toks[i] {
					r, err := s.Forward(alone[i], Batch{Tokens: []int32{tok}})
					if err != nil {
						t.Fatal(err)
					}
					want[i] = append(want[i], append([]float32(nil), r.Logits...))
				}
			}
			caches := make([]*Cache, seqs)
			for i := range caches {
				caches[i] = s.NewCache(100 + i)
			}
			if err := caches[3].CopyPrefix(alone[0], 15); err != nil {
				t.Fatal(err)
			}
			fed := []int{0, 0, 0, 15}
			var st Steps
			nv := s.Config.NVocab
			for {
				var cs []*Cache
				var rows []int
				var who []int
				var batch []int32
				for i := range seqs {
					left := len(toks[i]) - fed[i]
					if left == 0 || rng.IntN(4) == 0 {
						continue
					}
					r := min(left, 1+rng.IntN(24))
					cs, rows, who = append(cs, caches[i]), append(rows, r), append(who, i)
					batch = append(batch, toks[i][fed[i]:fed[i]+r]...)
				}
				if len(cs) == 0 {
					if fed[0] == len(toks[0]) && fed[1] == len(toks[1]) && fed[2] == len(toks[2]) && fed[3] == len(toks[3]) {
						break
					}
					continue
				}
				res, err := s.StepRows(&st, cs, rows, Batch{Tokens: batch})
				if err != nil {
					t.Fatal(err)
				}
				for k, i := range who {
					fed[i] += rows[k]
					w := want[i][fed[i]-1]
					got := res.Logits[k*nv : (k+1)*nv]
					for v := range got {
						if math.Float32bits(got[v]) != math.Float32bits(w[v]) {
							t.Fatalf("sequence %d after %d tokens (rows %v): logit %d is %v, alone %v", i, fed[i], rows, v, got[v], w[v])
						}
					}
				}
			}
			for i := range seqs {
				if !SamePrefix(caches[i], alone[i], len(toks[i])) {
					t.Errorf("sequence %d: the cache differs from its run alone", i)
				}
			}
			if SamePrefix(caches[1], alone[2], 10) {
				t.Error("SamePrefix found two different sequences' caches equal")
			}
		})
	}
}
