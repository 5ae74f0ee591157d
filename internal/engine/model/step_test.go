package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// TestStepBitIdentical decodes four sequences (prompts of different
// lengths) together with Step, in changing company and order, and checks
// every logit against the same sequence decoded alone with Forward.
func TestStepBitIdentical(t *testing.T) {
	for _, m := range smallCases() {
		t.Run(m.name, func(t *testing.T) {
			path := m.file(t)
			s, _ := openShard(t, path, whole, Options{Threads: 2})
			rng := rand.New(rand.NewPCG(11, 12))
			const seqs, steps = 4, 6
			prompts := make([][]int32, seqs)
			tokens := make([][]int32, seqs) // the token each sequence takes at each step
			for i := range prompts {
				prompts[i] = make([]int32, 1+i*7)
				for j := range prompts[i] {
					prompts[i][j] = rng.Int32N(300)
				}
				tokens[i] = make([]int32, steps)
				for j := range tokens[i] {
					tokens[i][j] = rng.Int32N(300)
				}
			}
			// Alone: each sequence's logits at each step.
			want := make([][][]float32, seqs)
			for i := range prompts {
				c := s.NewCache(64)
				if _, err := s.Forward(c, Batch{Tokens: prompts[i]}); err != nil {
					t.Fatal(err)
				}
				for _, tok := range tokens[i] {
					r, err := s.Forward(c, Batch{Tokens: []int32{tok}})
					if err != nil {
						t.Fatal(err)
					}
					want[i] = append(want[i], append([]float32(nil), r.Logits...))
				}
			}
			// Together: who steps changes from step to step.
			caches := make([]*Cache, seqs)
			for i := range prompts {
				caches[i] = s.NewCache(40 + 8*i) // different capacities
				if _, err := s.Forward(caches[i], Batch{Tokens: prompts[i]}); err != nil {
					t.Fatal(err)
				}
			}
			done := make([]int, seqs)
			var st Steps
			for _, who := range [][]int{{0, 1, 2, 3}, {3, 1}, {2, 0, 1}, {0}, {1, 2, 3, 0}, {3, 2, 1, 0}, {2, 3}, {0, 1}, {2, 3}, {0, 1, 2, 3}} {
				var cs []*Cache
				var toks []int32
				for _, i := range who {
					if done[i] < steps {
						cs = append(cs, caches[i])
						toks = append(toks, tokens[i][done[i]])
					}
				}
				if len(cs) == 0 {
					continue
				}
				r, err := s.Step(&st, cs, Batch{Tokens: toks})
				if err != nil {
					t.Fatal(err)
				}
				nv := s.Config.NVocab
				k := 0
				for _, i := range who {
					if done[i] >= steps {
						continue
					}
					got := r.Logits[k*nv : (k+1)*nv]
					for v := range got {
						if math.Float32bits(got[v]) != math.Float32bits(want[i][done[i]][v]) {
							t.Fatalf("sequence %d step %d stepped with %v: logit %d is %v, alone %v", i, done[i], who, v, got[v], want[i][done[i]][v])
						}
					}
					done[i]++
					k++
				}
			}
			for i, n := range done {
				if n != steps {
					t.Fatalf("sequence %d took %d steps, want %d", i, n, steps)
				}
			}
		})
	}
}

// TestStepErrors: batches Step cannot take are errors that say why.
func TestStepErrors(t *testing.T) {
	s, _ := openShard(t, smallModel(t, tensor.Q8_0), whole, Options{Threads: 1})
	a, b, full := s.NewCache(8), s.NewCache(8), s.NewCache(1)
	if _, err := s.Forward(full, Batch{Tokens: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	var st Steps
	for _, c := range []struct {
		name   string
		caches []*Cache
		toks   []int32
		want   string
	}{
		{"none", nil, nil, "no sequences"},
		{"count", []*Cache{a, b}, []int32{1}, "one token each"},
		{"twice", []*Cache{a, b, a}, []int32{1, 2, 3}, "also sequence 0's"},
		{"vocabulary", []*Cache{a}, []int32{300}, "outside the vocabulary"},
		{"full", []*Cache{a, full}, []int32{1, 2}, "context full"},
	} {
		_, err := s.Step(&st, c.caches, Batch{Tokens: c.toks})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if a.Len() != 0 || b.Len() != 0 {
		t.Errorf("refused steps changed the caches: lengths %d, %d", a.Len(), b.Len())
	}
	// After warm-up a step allocates nothing.
	cs, toks := []*Cache{a, b}, []int32{1, 2}
	if _, err := s.Step(&st, cs, Batch{Tokens: toks}); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(5, func() {
		if _, err := s.Step(&st, cs, Batch{Tokens: toks}); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("a step made %v allocations, want 0", allocs)
	}
}

// BenchmarkStep compares decoding several sequences one Forward each with
// decoding them together in one Step, side by side: tok/s counts every
// sequence's tokens.
func BenchmarkStep(b *testing.B) {
	for _, bc := range benchCases() {
		for _, seqs := range []int{4, 8} {
			for _, together := range []bool{false, true} {
				name := bc.name + "/seqs=" + string(rune('0'+seqs)) + "/separate"
				if together {
					name = bc.name + "/seqs=" + string(rune('0'+seqs)) + "/step"
				}
				b.Run(name, func(b *testing.B) {
					s := benchShard(b, bc)
					const ctx = 128
					caches := make([]*Cache, seqs)
					toks := make([]int32, seqs)
					for i := range caches {
						caches[i] = s.NewCache(ctx)
						toks[i] = int32(i + 1)
					}
					var st Steps
					b.ReportAllocs()
					for b.Loop() {
						if caches[0].Len() == ctx {
							for _, c := range caches {
								c.Truncate(0)
							}
						}
						if together {
							if _, err := s.Step(&st, caches, Batch{Tokens: toks}); err != nil {
								b.Fatal(err)
							}
						} else {
							for i, c := range caches {
								if _, err := s.Forward(c, Batch{Tokens: toks[i : i+1]}); err != nil {
									b.Fatal(err)
								}
							}
						}
						for i := range toks {
							toks[i] = (toks[i]*7 + 3) % int32(s.Config.NVocab)
						}
					}
					b.ReportMetric(float64(b.N*seqs)/b.Elapsed().Seconds(), "tok/s")
				})
			}
		}
	}
}

// TestStepAcrossShards steps three sequences through a model split in two
// (tokens into the first shard, its hidden rows into the second) and checks
// the logits against the whole model decoding each sequence alone.
func TestStepAcrossShards(t *testing.T) {
	path := synthFile(t, synth.Shape{Name: "gqa", Arch: "llama", NEmbd: 128, NLayer: 4, NHead: 8, NHeadKV: 2,
		NFF: 256, NVocab: 300, RopeBase: 10000, CtxLen: 256}, tensor.Q8_0)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	load := func(r Range) *Shard {
		s, err := Load(f, r, Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	whole, first, last := load(Whole(4)), load(Range{Start: 0, End: 2, First: true}), load(Range{Start: 2, End: 4, Last: true})
	prompts := [][]int32{{1, 5}, {1, 7, 9, 11}, {1}}
	var ca, cb []*Cache
	var want [][]float32
	for _, p := range prompts {
		c := whole.NewCache(16)
		whole.Forward(c, Batch{Tokens: p})
		r, err := whole.Forward(c, Batch{Tokens: []int32{42}})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, append([]float32(nil), r.Logits...))
		a, b := first.NewCache(16), last.NewCache(16)
		h, err := first.Forward(a, Batch{Tokens: p})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := last.Forward(b, Batch{Hidden: h.Hidden}); err != nil {
			t.Fatal(err)
		}
		ca, cb = append(ca, a), append(cb, b)
	}
	var sa, sb Steps
	h, err := first.Step(&sa, ca, Batch{Tokens: []int32{42, 42, 42}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := last.Step(&sb, cb, Batch{Hidden: h.Hidden})
	if err != nil {
		t.Fatal(err)
	}
	nv := whole.Config.NVocab
	for i := range prompts {
		for v, x := range r.Logits[i*nv : (i+1)*nv] {
			if math.Float32bits(x) != math.Float32bits(want[i][v]) {
				t.Fatalf("sequence %d: logit %d is %v across shards in one step, %v whole and alone", i, v, x, want[i][v])
			}
		}
	}
	if _, err := last.Step(&sb, cb, Batch{Tokens: []int32{1, 2, 3}}); err == nil || !strings.Contains(err.Error(), "hidden row") {
		t.Errorf("tokens into the second shard: %v, want an error about hidden rows", err)
	}
}
