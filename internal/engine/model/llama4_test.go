package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// tweaks are changes a test model's function registers for the shards
// loaded from its file (by path), which openShard and the split test
// apply after Load: smallLlama4's small chunks.
var tweaks sync.Map // path → func(*Shard)

// applyTweak applies the tweak registered for path to s, if any.
func applyTweak(path string, s *Shard) {
	if f, ok := tweaks.Load(path); ok {
		f.(func(*Shard))(s)
	}
}

// shrinkLlama4 gives a llama4 shard llama.cpp's schedule at the scale of
// a short prompt: chunks of 8 positions and an attention-temperature floor
// of 8, where llama.cpp hard-wires 8192 for both, so that the bit-identity
// tests' prompts cross chunk boundaries and temperature steps.
func shrinkLlama4(s *Shard) { s.Config.ChunkSize, s.Config.AttnTemp.Floor = 8, 8 }

// smallLlama4 writes synth's llama4 model in Q8_0 and registers
// shrinkLlama4 for its shards.
func smallLlama4(t *testing.T) string {
	t.Helper()
	p := synthFile(t, synth.ArchShapes()["llama4"], tensor.Q8_0)
	tweaks.Store(p, shrinkLlama4)
	t.Cleanup(func() { tweaks.Delete(p) })
	return p
}

// llama4Ref is synth-llama4.json: the public prompts, and the
// long_prompt section of 8216 tokens, whose last 48 positions (from 8168)
// and steps cross llama.cpp's chunk boundary and temperature step at 8192.
type llama4Ref struct {
	synthRef
	Model struct {
		SHA256  string `json:"sha256"`
		Command string `json:"command"`
	} `json:"model"`
	Long *struct {
		NCtx    int            `json:"n_ctx"`
		Prompts []llama4Prompt `json:"prompts"`
		Dequant struct {
			Prompts []llama4Prompt `json:"prompts"`
		} `json:"dequant_f32"`
	} `json:"long_prompt"`
}

type llama4Prompt struct {
	synthPrompt
	FirstLogit int `json:"first_logit_position"`
}

// TestSyntheticLlama4Reference checks llama4 against llama.cpp's logits on
// the model `skulk dev synth --arch llama4` writes (bench/synthref.sh
// llama4): the public prompts, where the no-rope block 3, the q/k norms of
// the others, the dense and expert blocks with their shared expert and
// input-weighted experts show; and the long prompt, whose positions from
// 8192 on attend within their own chunk on the chunked blocks while block
// 3's queries take the temperature log(2)·0.1+1 (from position 8191). Both
// within the bounds of the other quantized references (llama.cpp-mimicking
// activations against the main runs, exact ones against llama.cpp on its
// dequantized copy). The public prompts also within 5% relative rms on the
// mimicking path with llama.cpp's top-1 at every position (measured 0.14%,
// 34/34); over the long prompt the mimicking path's activation-rounding
// flips accumulate through 8k positions of attention (measured max 1.2,
// rms 0.064, 6.4% relative, top-1 45/48 with the three others at margins
// 0.29, 0.042 and 0.0016, all within the mimicking bounds), so there the
// 5% and every-position top-1 are asked of the exact path against the
// dequantized copy (measured 1.6e-6 relative, 48/48), which a wrong chunk
// mask or temperature fails by far.
func TestSyntheticLlama4Reference(t *testing.T) {
	var ref llama4Ref
	readJSON(t, filepath.Join(repoRoot(), "testdata", "synthetic", "synth-llama4.json"), &ref)
	if ref.Dequant == nil || ref.Long == nil {
		t.Fatal("the reference has no dequant_f32 or long_prompt section")
	}
	path := referenceModel(t, "llama4", ref.Model.SHA256, ref.Model.Command)
	s, _ := openShard(t, path, whole, Options{Threads: 2, F32Cache: true})
	e, _ := openShard(t, path, whole, Options{Threads: 2, ExactActivations: true, F32Cache: true})
	for b, ly := range s.layers {
		if ly.noRope != (b == 3) || ly.chunked != (b != 3) || ly.l2Norm != (b != 3) || (ly.router != nil) != (b%2 == 1) {
			t.Fatalf("block %d: no rope %v, chunked %v, q/k norm %v, experts %v; want block 3 alone unroped and full, experts on 1 and 3",
				b, ly.noRope, ly.chunked, ly.l2Norm, ly.router != nil)
		}
	}
	t.Run("short", func(t *testing.T) {
		summary, st := checkStatsIn(t, s, ref.Prompts, ref.Tolerance.Mimic, 256)
		rel := relRMS(st, ref.Prompts)
		t.Logf("mimicking vs llama.cpp: %s; relative rms %.3g; %s", summary, rel, top1Agreement(t, s, ref.Prompts, 256))
		if rel > 0.05 {
			t.Errorf("relative rms %.3g, bound 0.05", rel)
		}
		allTop1(t, s, ref.Prompts)
		summary, _ = checkStatsIn(t, e, ref.Dequant.Prompts, ref.Tolerance.Dequant, 256)
		t.Logf("exact activations vs llama.cpp on the dequantized copy: %s", summary)
	})
	t.Run("long", func(t *testing.T) {
		if testing.Short() {
			t.Skip("an 8216-token prompt, twice")
		}
		st, rel, agree := checkLongLlama4(t, e, ref.Long.Dequant.Prompts[0], ref.Tolerance.Dequant, true)
		t.Logf("exact activations vs llama.cpp on the dequantized copy, positions %d–%d and 4 steps: max %.2g, rms %.2g over %d logits; relative rms %.3g; top-1 agrees at %s",
			ref.Long.Prompts[0].FirstLogit, len(ref.Long.Prompts[0].IDs)-1, st.max, st.rms(), st.n, rel, agree)
		if rel > 0.05 {
			t.Errorf("relative rms %.3g, bound 0.05", rel)
		}
		st, rel, agree = checkLongLlama4(t, s, ref.Long.Prompts[0], ref.Tolerance.Mimic, false)
		t.Logf("mimicking vs llama.cpp: max %.2g, rms %.2g over %d logits; relative rms %.3g; top-1 agrees at %s",
			st.max, st.rms(), st.n, rel, agree)
	})
}

// allTop1 fails at every prompt position where the engine's argmax is not
// llama.cpp's, however small llama.cpp's margin.
func allTop1(t *testing.T, s *Shard, prompts []synthPrompt) {
	t.Helper()
	for _, p := range prompts {
		r, err := s.Forward(s.NewCache(256), Batch{Tokens: p.IDs, AllLogits: true})
		if err != nil {
			t.Fatal(err)
		}
		nv := s.Config.NVocab
		for i, want := range p.PromptLogits {
			if got := argmax(r.Logits[i*nv : (i+1)*nv]); got != argmax(want) {
				t.Errorf("%s position %d: argmax %d, llama.cpp %d (margin %.3g)", p.Name, i, got, argmax(want), top2Gap(want))
			}
		}
	}
}

// checkLongLlama4 runs the long prompt p through s and checks its recorded
// positions and teacher-forced steps within b (max, rms), the argmax at
// every recorded position (with every, however small llama.cpp's margin;
// otherwise where it is at least b's top-1 bound), and free-running greedy
// up to the first near-tie; it returns the differences, their rms relative
// to the reference logits', and the top-1 agreement.
func checkLongLlama4(t *testing.T, s *Shard, p llama4Prompt, b bound, every bool) (logitStats, float64, string) {
	t.Helper()
	nv := s.Config.NVocab
	c := s.NewCache(len(p.IDs) + len(p.Generated))
	res, err := s.Forward(c, Batch{Tokens: p.IDs, AllLogits: true})
	if err != nil {
		t.Fatal(err)
	}
	var st logitStats
	var sq float64
	agree := 0
	for i, want := range p.PromptLogits {
		pos := p.FirstLogit + i
		got := res.Logits[pos*nv : (pos+1)*nv]
		st.add(got, want)
		for _, v := range want {
			sq += float64(v) * float64(v)
		}
		if argmax(got) == argmax(want) {
			agree++
		} else if every || top2Gap(want) >= b.Top1 {
			t.Errorf("position %d: argmax %d, llama.cpp %d (margin %.3g)", pos, argmax(got), argmax(want), top2Gap(want))
		}
	}
	last := append([]float32(nil), res.Logits[(len(p.IDs)-1)*nv:]...)
	free := s.NewCache(len(p.IDs) + len(p.Generated))
	if err := free.CopyPrefix(c, len(p.IDs)); err != nil {
		t.Fatal(err)
	}
	step := last
	for k := range p.StepLogits {
		if k > 0 {
			r, err := s.Forward(c, Batch{Tokens: []int32{p.Generated[k-1]}})
			if err != nil {
				t.Fatal(err)
			}
			step = r.Logits
		}
		st.add(step, p.StepLogits[k])
	}
	for k, want := range p.Generated {
		got := argmax(last)
		if p.Gap[k] < b.Top1 {
			break
		}
		if got != want {
			t.Errorf("greedy step %d: %d, llama.cpp %d (gap %.3g)", k, got, want, p.Gap[k])
			break
		}
		r, err := s.Forward(free, Batch{Tokens: []int32{got}})
		if err != nil {
			t.Fatal(err)
		}
		last = r.Logits
	}
	if st.max > b.MaxAbs || st.rms() > b.RMS {
		t.Errorf("logits differ by max %.3g (bound %.3g), rms %.3g (bound %.3g)", st.max, b.MaxAbs, st.rms(), b.RMS)
	}
	rel := st.rms() / math.Sqrt(sq/float64(len(p.PromptLogits)*nv))
	return st, rel, fmt.Sprintf("%d/%d positions", agree, len(p.PromptLogits))
}

// TestLlama4Schedule: the attention temperature as llama.cpp computes it
// (1 below position floor-1, then log(⌊(p+1)/floor⌋+1)·0.1+1), and which
// blocks take no rope, chunks and experts, for the real models' pattern.
func TestLlama4Schedule(t *testing.T) {
	at := AttnTemp{Scale: 0.1, Floor: 8192, Offset: 1}
	for _, tc := range []struct {
		pos  int
		want float64
	}{{0, 1}, {8190, 1}, {8191, 1 + 0.1*math.Ln2}, {16382, 1 + 0.1*math.Ln2}, {16383, 1 + 0.1*math.Log(3)}} {
		if got := at.factor(tc.pos); math.Abs(float64(got)-tc.want) > 1e-6 {
			t.Errorf("factor(%d) = %v, want %v", tc.pos, got, tc.want)
		}
	}
	c := Config{NoRopeStep: 4, ChunkSize: 8192, SWAPeriod: 4, MoE: MoE{NExpert: 16, Interleave: 2}}
	for b := range 8 {
		if c.noRope(b) != (b%4 == 3) || c.swaLayer(b) != (b%4 != 3) || c.moeBlock(b) != (b%2 == 1) {
			t.Errorf("block %d: no rope %v, chunked %v, experts %v", b, c.noRope(b), c.swaLayer(b), c.moeBlock(b))
		}
	}
}

// TestLlama4ChunkedExact: with chunks of 8, a 150-token prompt crosses
// many chunk boundaries, far enough that the chunked blocks skip the
// first swaAlign-aligned positions of their cache; the logits must be bit
// for bit those of reading from position 0 and of one token at a time.
func TestLlama4ChunkedExact(t *testing.T) {
	s, _ := openShard(t, smallLlama4(t), whole, Options{Threads: 2})
	if s.Config.ChunkSize != 8 {
		t.Fatalf("chunk %d, want the test's 8", s.Config.ChunkSize)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	prompt := make([]int32, 150)
	for i := range prompt {
		prompt[i] = rng.Int32N(int32(s.Config.NVocab))
	}
	batch := func() []float32 {
		r, err := s.Forward(s.NewCache(160), Batch{Tokens: prompt, AllLogits: true})
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
	s.swaAlign = 1 << 30
	fromZero := batch()
	for name, got := range map[string][]float32{"one token at a time": steps, "reading from position 0": fromZero} {
		for i := range ref {
			if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
				t.Fatalf("%s: logit %d (position %d) is %v, one batch %v", name, i, i/s.Config.NVocab, got[i], ref[i])
			}
		}
	}
}
