package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// TestMoEReadsOnlySelectedExperts proves that a prompt and a decode step
// read no weight of an expert none of their tokens was routed to: every
// such expert's bytes are overwritten with 0xFF (a NaN fp16 scale in
// every Q8_0 block, an infinite one in every MXFP4 block), and the logits
// stay bit for bit those of the intact file. The experts each block chose
// are read off one-block shards, which compute what the whole model does.
func TestMoEReadsOnlySelectedExperts(t *testing.T) {
	qwen := synth.Shape{Name: "sel", Arch: "qwen3moe", NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, HeadDim: 64,
		NFF: 512, NVocab: 300, RopeBase: 1e6, CtxLen: 256, NExpert: 16, NExpertUsed: 2, NFFExp: 256}
	oss := synth.ArchShapes()["gpt-oss"]
	oss.NLayer, oss.NExpert = 2, 16 // 4 of 16 experts: most stay unread
	mix, _ := synth.Shipped("gpt-oss")
	for _, c := range []struct {
		name  string
		shape synth.Shape
		mix   synth.Mix
	}{{"qwen3moe-Q8_0", qwen, synth.Uniform(tensor.Q8_0)}, {"gpt-oss-MXFP4_MOE", oss, mix}} {
		t.Run(c.name, func(t *testing.T) {
			w, err := synth.BuildMix(c.shape, c.mix, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "sel.gguf")
			if err := w.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			readsOnlySelected(t, path, c.shape)
		})
	}
}

// readsOnlySelected checks that poisoning every expert matrix a prompt
// and one decode step did not route to leaves their logits bit-identical.
func readsOnlySelected(t *testing.T, path string, shape synth.Shape) {
	prompt, next := []int32{1, 45, 267}, int32(89)

	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	used := make([]map[int32]bool, shape.NLayer)
	var hidden [2][]float32
	for b := range shape.NLayer {
		used[b] = map[int32]bool{}
		s, err := Load(f, Range{Start: b, End: b + 1, First: b == 0}, Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		c := s.NewCache(16)
		for step, toks := range [][]int32{prompt, {next}} {
			batch := Batch{Hidden: hidden[step]}
			if b == 0 {
				batch = Batch{Tokens: toks}
			}
			r, err := s.Forward(c, batch)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range c.ar.sel[:len(toks)*shape.NExpertUsed] {
				used[b][e] = true
			}
			hidden[step] = append([]float32(nil), r.Hidden...)
		}
		s.Close()
	}
	want := runTwice(t, path, prompt, next)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	poisoned := 0
	for b := range shape.NLayer {
		for _, name := range []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"} {
			ti, _ := f.Tensor(fmt.Sprintf("blk.%d.%s.weight", b, name))
			per := ti.Size / int64(shape.NExpert)
			for e := range int32(shape.NExpert) {
				if used[b][e] {
					continue
				}
				off := f.DataOffset + int64(ti.Offset) + int64(e)*per
				for i := range data[off : off+per] {
					data[off+int64(i)] = 0xFF
				}
				poisoned++
			}
		}
	}
	f.Close()
	if poisoned == 0 {
		t.Fatal("every expert was used; the test proves nothing")
	}
	bad := filepath.Join(t.TempDir(), "poisoned.gguf")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got := runTwice(t, bad, prompt, next)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d is %v with %d unselected expert matrices poisoned, %v intact", i, got[i], poisoned, want[i])
		}
	}
	t.Logf("%d of %d expert matrices poisoned, logits unchanged", poisoned, 3*shape.NLayer*shape.NExpert)
}

// runTwice returns the logits of the prompt (every position) and of one
// decode step after it.
func runTwice(t *testing.T, path string, prompt []int32, next int32) []float32 {
	t.Helper()
	s, _ := openShard(t, path, whole, Options{Threads: 2})
	c := s.NewCache(16)
	r, err := s.Forward(c, Batch{Tokens: prompt, AllLogits: true})
	if err != nil {
		t.Fatal(err)
	}
	out := append([]float32(nil), r.Logits...)
	r, err = s.Forward(c, Batch{Tokens: []int32{next}})
	if err != nil {
		t.Fatal(err)
	}
	return append(out, r.Logits...)
}

// TestMoEFloatGatherOnlyWhenNeeded checks that the per-(token, expert) copy
// of the float activations exists only where the expert matmuls read
// floats (exact activations): a quantized model rounds each token once and
// gathers its bytes, so a 512-row batch of a 30B-A3B-like shape does not
// carry the 32 MB buffer.
func TestMoEFloatGatherOnlyWhenNeeded(t *testing.T) {
	path := smallMoE(t, tensor.Q8_0)
	for _, exact := range []bool{false, true} {
		s, _ := openShard(t, path, whole, Options{Threads: 2, ExactActivations: exact})
		t.Cleanup(s.Close)
		c := s.NewCache(64)
		if _, err := s.Forward(c, Batch{Tokens: []int32{1, 2, 3, 4}}); err != nil {
			t.Fatal(err)
		}
		if got := len(c.ar.xe) > 0; got != exact {
			t.Errorf("exact activations %v: float gather buffer of %d values", exact, len(c.ar.xe))
		}
	}
}
