package model

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// synthFile writes a small random model with grouped-query attention.
func synthFile(t *testing.T, s synth.Shape, typ tensor.Type) string {
	t.Helper()
	w, err := synth.Build(s, typ, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), s.Name+".gguf")
	if err := w.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// runSplit runs a prompt and three decode steps through shards [0,k) and
// [k,n), handing the hidden state across as plain float32 rows, and returns
// all logits. path is f's, for the tweak a test model may register
// (applyTweak).
func runSplit(t *testing.T, f *gguf.File, path string, k int, prompt []int32) []float32 {
	t.Helper()
	cfg, _ := ReadConfig(f)
	n := cfg.NLayer
	a, err := Load(f, Range{Start: 0, End: k, First: true}, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Load(f, Range{Start: k, End: n, Last: true}, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	applyTweak(path, a)
	applyTweak(path, b)
	ca, cb := a.NewCache(64), b.NewCache(64)
	var out []float32
	in := prompt
	for step := 0; step < 4; step++ {
		h, err := a.Forward(ca, Batch{Tokens: in})
		if err != nil {
			t.Fatal(err)
		}
		wire := encodeRows(h.Hidden) // what crosses the network
		r, err := b.Forward(cb, Batch{Hidden: decodeRows(wire), AllLogits: true})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Logits...)
		in = []int32{argmax(r.Logits[len(r.Logits)-cfg.NVocab:])}
	}
	return out
}

func encodeRows(x []float32) []byte {
	b := make([]byte, 0, 4*len(x))
	for _, v := range x {
		u := math.Float32bits(v)
		b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	return b
}

func decodeRows(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return x
}

// TestShardSplitBitIdentical checks that every split point of a model gives
// logits bit-identical to running it whole.
func TestShardSplitBitIdentical(t *testing.T) {
	models := map[string]string{
		"stories260K": findTestFile(t, "models/stories260K.gguf", "models/stories260K.gguf"),
		"synth-gqa-q8_0": synthFile(t, synth.Shape{Name: "gqa", Arch: "llama", NEmbd: 128, NLayer: 4, NHead: 8, NHeadKV: 2,
			NFF: 256, NVocab: 300, RopeBase: 10000, CtxLen: 256}, tensor.Q8_0),
		"synth-qwen3-q4_k": synthFile(t, synth.Shape{Name: "q3", Arch: "qwen3", NEmbd: 256, NLayer: 3, NHead: 4, NHeadKV: 2,
			HeadDim: 64, NFF: 512, NVocab: 300, RopeBase: 1e6, Tied: true, CtxLen: 256}, tensor.Q4_K),
		"synth-qwen3moe-q4_k": synthFile(t, synth.Shape{Name: "q3moe", Arch: "qwen3moe", NEmbd: 256, NLayer: 3, NHead: 4, NHeadKV: 2,
			HeadDim: 64, NFF: 512, NVocab: 300, RopeBase: 1e6, CtxLen: 256, NExpert: 8, NExpertUsed: 3, NFFExp: 256}, tensor.Q4_K),
		"synth-glm4moe-q8_0":   synthFile(t, synth.ArchShapes()["glm4moe"], tensor.Q8_0),
		"synth-deepseek2-q8_0": synthFile(t, synth.ArchShapes()["deepseek2"], tensor.Q8_0),
		"synth-gpt-oss-mxfp4":  smallGptOss(t),
		// Fused projections split at load, LongRoPE factors on every
		// shard: the caches of 64 positions take the short ones, and
		// the long ones past an original context of 32.
		"synth-phi3-q4_k_m": func() string { p, _ := archModel(t, "phi3"); return p }(),
		// Local and global blocks with their own ropes, post norms,
		// GELU: the prompt and steps (10 positions) cross the window of
		// 8, and every split point falls before, after or between
		// local blocks and the global one.
		"synth-gemma3-q4_k_m": func() string { p, _ := archModel(t, "gemma3"); return p }(),
		// YaRN and the query temperature, whose floor is the original
		// context: 4 here, so the prompt and steps (positions 0-10)
		// take three factors, on every shard.
		"synth-mistral3-q4_k": func() string {
			sh := synth.ArchShapes()["mistral3"]
			sh.YarnOrigCtx = 4
			return synthFile(t, sh, tensor.Q4_K)
		}(),
		// No rope on block 3 (its queries scaled by the attention
		// temperature), q/k norms and chunked attention on the others,
		// dense blocks between the expert ones, at small scale: chunks
		// and a temperature floor of 8, which the prompt and steps (10
		// positions) cross.
		"synth-llama4-q8_0": smallLlama4(t),
		"synth-phi3-long-q4_k": func() string {
			sh := synth.ArchShapes()["phi3"]
			sh.LongRopeOrigCtx = 32
			return synthFile(t, sh, tensor.Q4_K)
		}(),
	}
	prompt := []int32{1, 45, 267, 89, 12, 200, 7}
	for name, path := range models {
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cfg, _ := ReadConfig(f)
			whole := runSplit(t, f, path, cfg.NLayer, prompt) // [0,n) + empty last shard
			ref := func() []float32 {
				s, err := Load(f, Whole(cfg.NLayer), Options{Threads: 2})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				applyTweak(path, s)
				c := s.NewCache(64)
				var out []float32
				in := prompt
				for step := 0; step < 4; step++ {
					r, err := s.Forward(c, Batch{Tokens: in, AllLogits: true})
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, r.Logits...)
					in = []int32{argmax(r.Logits[len(r.Logits)-cfg.NVocab:])}
				}
				return out
			}()
			for k := 0; k <= cfg.NLayer; k++ {
				got := whole
				if k < cfg.NLayer {
					got = runSplit(t, f, path, k, prompt)
				}
				if len(got) != len(ref) {
					t.Fatalf("k=%d: %d logits, whole model %d", k, len(got), len(ref))
				}
				for i := range ref {
					if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
						t.Fatalf("split at %d: logit %d is %v, whole model %v", k, i, got[i], ref[i])
					}
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	f, err := gguf.Open(findTestFile(t, "models/stories260K.gguf", "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, r := range []Range{{Start: -1, End: 2, First: true}, {Start: 0, End: 6}, {Start: 3, End: 2}, {Start: 2, End: 2}} {
		if s, err := Load(f, r, Options{Threads: 1}); err == nil {
			s.Close()
			t.Errorf("range %+v loaded", r)
		}
	}
	s, err := Load(f, Whole(5), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.NewCache(4)
	if _, err := s.Forward(c, Batch{Tokens: []int32{1, 512}}); err == nil {
		t.Error("out-of-vocabulary token accepted")
	}
	if _, err := s.Forward(c, Batch{Tokens: []int32{1, 2, 3, 4, 5}}); err == nil {
		t.Error("batch past the cache capacity accepted")
	}
	if _, err := s.Forward(c, Batch{}); err == nil {
		t.Error("empty batch accepted")
	}
	if _, err := s.Forward(c, Batch{Hidden: make([]float32, 64)}); err == nil {
		t.Error("hidden states accepted by the first shard")
	}
}
