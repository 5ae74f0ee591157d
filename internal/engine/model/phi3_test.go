package model

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// TestSyntheticPhi3Reference checks phi3 against llama.cpp's logits on the
// model `skulk dev synth --arch phi3` writes (bench/synthref.sh phi3), in
// both LongRoPE regimes, within the bounds of the other quantized
// references: caches of 256 positions, llama.cpp's n_ctx of the main
// runs, are within the model's original context of 256 and take the short
// factors; caches of 512, the long_context section's n_ctx, take the long
// ones. The two references differ by up to 4.5 in the logits, so a wrong
// choice of factors (or one off by one at the boundary) fails here.
func TestSyntheticPhi3Reference(t *testing.T) {
	var ref struct {
		synthRef
		Model struct {
			SHA256  string `json:"sha256"`
			Command string `json:"command"`
		} `json:"model"`
		Long *struct {
			NCtx    int           `json:"n_ctx"`
			Prompts []synthPrompt `json:"prompts"`
			Dequant struct {
				Prompts []synthPrompt `json:"prompts"`
			} `json:"dequant_f32"`
		} `json:"long_context"`
	}
	readJSON(t, filepath.Join(repoRoot(), "testdata", "synthetic", "synth-phi3.json"), &ref)
	if ref.Dequant == nil || ref.Long == nil {
		t.Fatal("the reference has no dequant_f32 or long_context section")
	}
	path := referenceModel(t, "phi3", ref.Model.SHA256, ref.Model.Command)
	s, _ := openShard(t, path, whole, Options{Threads: 2, F32Cache: true})
	e, _ := openShard(t, path, whole, Options{Threads: 2, ExactActivations: true, F32Cache: true})
	if s.ropeLong == nil || s.ropeFreqs == nil {
		t.Fatal("the model's rope factors were not loaded")
	}
	for _, c := range []struct {
		name             string
		capacity         int
		prompts, dequant []synthPrompt
	}{
		{"short factors", 256, ref.Prompts, ref.Dequant.Prompts},
		{"long factors", ref.Long.NCtx, ref.Long.Prompts, ref.Long.Dequant.Prompts},
	} {
		t.Run(c.name, func(t *testing.T) {
			summary, st := checkStatsIn(t, s, c.prompts, ref.Tolerance.Mimic, c.capacity)
			t.Logf("mimicking vs llama.cpp: %s; relative rms %.3g; %s", summary, relRMS(st, c.prompts), top1Agreement(t, s, c.prompts, c.capacity))
			summary, _ = checkStatsIn(t, e, c.dequant, ref.Tolerance.Dequant, c.capacity)
			t.Logf("exact activations vs llama.cpp on the dequantized copy: %s", summary)
		})
	}
}

// relRMS is the rms of the logit differences st over the rms of the
// reference's prompt logits.
func relRMS(st logitStats, prompts []synthPrompt) float64 {
	var sq float64
	n := 0
	for _, p := range prompts {
		for _, row := range p.PromptLogits {
			for _, v := range row {
				sq += float64(v) * float64(v)
				n++
			}
		}
	}
	return st.rms() / math.Sqrt(sq/float64(n))
}

// top1Agreement reports at how many prompt positions the engine's argmax
// is llama.cpp's.
func top1Agreement(t *testing.T, s *Shard, prompts []synthPrompt, capacity int) string {
	t.Helper()
	agree, n := 0, 0
	for _, p := range prompts {
		r, err := s.Forward(s.NewCache(capacity), Batch{Tokens: p.IDs, AllLogits: true})
		if err != nil {
			t.Fatal(err)
		}
		nv := s.Config.NVocab
		for i, want := range p.PromptLogits {
			if argmax(r.Logits[i*nv:(i+1)*nv]) == argmax(want) {
				agree++
			}
			n++
		}
	}
	return fmt.Sprintf("top-1 agrees at %d/%d prompt positions", agree, n)
}

// TestLongRopeFactors checks which rotary factors a sequence takes, by the
// positions its cache may hold: LongRoPE's short factors up to the
// original context, the long ones past it; rope_freqs (llama3) always.
func TestLongRopeFactors(t *testing.T) {
	short, long, freqs := []float32{1, 2}, []float32{3, 4}, []float32{5, 6}
	for _, c := range []struct {
		name        string
		freqs, long []float32
		orig, limit int
		want        []float32
	}{
		{"one position", short, long, 256, 1, short},
		{"within the original context", short, long, 256, 255, short},
		{"the original context exactly", short, long, 256, 256, short},
		{"one past it", short, long, 256, 257, long},
		{"far past it", short, long, 256, 131072, long},
		{"no short factors, within", nil, long, 256, 256, nil},
		{"no short factors, past", nil, long, 256, 512, long},
		{"rope_freqs", freqs, nil, 256, 512, freqs},
		{"no factors", nil, nil, 256, 512, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Shard{ropeFreqs: c.freqs, ropeLong: c.long}
			s.Config.RopeScaling.OrigCtx = c.orig
			if got := s.ropeFactors(c.limit); !sameFactors(got, c.want) {
				t.Errorf("a cache of %d positions takes %v, want %v", c.limit, got, c.want)
			}
		})
	}
}

// TestPhi3FusedTensors checks the splitting of phi3's fused tensors: the
// model with attn_qkv and the fused ffn_up must give the bits of the same
// model whose tensors were cut into attn_q/k/v (q, k, v rows in that
// order) and ffn_gate/ffn_up (the gate first), which phi3 also loads.
// Packed or not, every split part is multiplied as a tensor of its own.
func TestPhi3FusedTensors(t *testing.T) {
	fused, _ := archModel(t, "phi3")
	f, err := gguf.Open(fused)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := ReadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	for _, kv := range f.KVs {
		w.Set(kv.Key, kv.Value.V)
	}
	for _, ti := range f.Tensors {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		// cut writes the runs of rows of the fused tensor, whose name
		// ends with fused, under the block's names.
		cut := func(fused string, names []string, rows []int) {
			blk := strings.TrimSuffix(ti.Name, fused)
			rb := len(data) / int(ti.Dims[1])
			lo := 0
			for i, name := range names {
				w.AddTensor(blk+name, ti.Type, []uint64{ti.Dims[0], uint64(rows[i])}, data[lo*rb:(lo+rows[i])*rb])
				lo += rows[i]
			}
		}
		switch {
		case strings.HasSuffix(ti.Name, ".attn_qkv.weight"):
			cut("attn_qkv.weight", []string{"attn_q.weight", "attn_k.weight", "attn_v.weight"}, []int{cfg.QDim(), cfg.KVDim(), cfg.KVDim()})
		case strings.HasSuffix(ti.Name, ".ffn_up.weight"):
			cut("ffn_up.weight", []string{"ffn_gate.weight", "ffn_up.weight"}, []int{cfg.NFF, cfg.NFF})
		default:
			w.AddTensor(ti.Name, ti.Type, ti.Dims, data)
		}
	}
	separate := filepath.Join(t.TempDir(), "phi3-separate.gguf")
	if err := w.WriteFile(separate); err != nil {
		t.Fatal(err)
	}
	prompt := []int32{1, 45, 267, 89, 12, 200, 7, 901, 33}
	for _, opt := range []Options{{Threads: 2}, {Threads: 2, NoPack: true}} {
		var logits [2][]float32
		for i, p := range []string{fused, separate} {
			s, _ := openShard(t, p, whole, opt)
			r, err := s.Forward(s.NewCache(64), Batch{Tokens: prompt, AllLogits: true})
			if err != nil {
				t.Fatal(err)
			}
			logits[i] = append([]float32(nil), r.Logits...)
		}
		for i := range logits[0] {
			if math.Float32bits(logits[0][i]) != math.Float32bits(logits[1][i]) {
				t.Fatalf("NoPack %v: logit %d is %v fused, %v from separate tensors", opt.NoPack, i, logits[0][i], logits[1][i])
			}
		}
	}
}

// TestPhi3Config checks what ReadConfig takes from a phi3 file's metadata:
// the original context, the attention factor the converter writes, the
// queries' scale in place of the scores', and the sliding window, which
// every block then attends through.
func TestPhi3Config(t *testing.T) {
	shape := synth.ArchShapes()["phi3"]
	for _, c := range []struct {
		name   string
		window int
	}{
		{"no window", 0},
		{"window", 2047},
	} {
		t.Run(c.name, func(t *testing.T) {
			sh := shape
			sh.SlidingWindow = c.window
			path := synthFile(t, sh, tensor.Q8_0)
			s, _ := openShard(t, path, whole, Options{Threads: 2})
			cfg := s.Config
			// √(1 + ln(4096/256)/ln(256)) = √1.5
			if cfg.RopeScaling.OrigCtx != 256 || math.Abs(float64(cfg.RopeScaling.AttnFactor)-math.Sqrt(1.5)) > 1e-6 || cfg.AttnScale != 1 || !cfg.Phi3 {
				t.Errorf("config %+v", cfg)
			}
			for b, ly := range s.layers {
				if ly.window != c.window {
					t.Errorf("block %d has window %d, want %d", b, ly.window, c.window)
				}
			}
		})
	}
}

// TestPhi3MixedFactors runs sequences of both LongRoPE regimes in one
// batch: a cache of 32 positions (the original context: short factors)
// and one of 64 (long) step together through StepRows with each
// sequence's bits alone, and a prefix is shared only between caches of the
// same factors.
func TestPhi3MixedFactors(t *testing.T) {
	sh := synth.ArchShapes()["phi3"]
	sh.LongRopeOrigCtx = 32
	s, _ := openShard(t, synthFile(t, sh, tensor.Q8_0), whole, Options{Threads: 2})
	toks := [][]int32{{1, 45, 267, 89, 12, 200, 7, 901}, {1, 45, 267, 89, 640, 3, 77}}
	limits := []int{32, 64}
	nv := s.Config.NVocab
	alone := make([][]float32, len(toks))
	aloneC := make([]*Cache, len(toks))
	for i, tk := range toks {
		aloneC[i] = s.NewCache(limits[i])
		r, err := s.Forward(aloneC[i], Batch{Tokens: tk})
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = append([]float32(nil), r.Logits...)
	}
	if sameFactors(aloneC[0].ropeF, aloneC[1].ropeF) {
		t.Fatal("caches of 32 and 64 positions took the same factors")
	}
	var st Steps
	caches := []*Cache{s.NewCache(limits[0]), s.NewCache(limits[1])}
	r, err := s.StepRows(&st, caches, []int{len(toks[0]), len(toks[1])}, Batch{Tokens: append(append([]int32(nil), toks[0]...), toks[1]...)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range toks {
		got := r.Logits[i*nv : (i+1)*nv]
		for v := range got {
			if math.Float32bits(got[v]) != math.Float32bits(alone[i][v]) {
				t.Fatalf("sequence %d (cache of %d): logit %d is %v together, %v alone", i, limits[i], v, got[v], alone[i][v])
			}
		}
	}
	for _, c := range []struct {
		limit int
		ok    bool
	}{{16, true}, {32, true}, {33, false}, {64, false}} {
		err := s.NewCache(c.limit).CopyPrefix(aloneC[0], 4)
		if (err == nil) != c.ok {
			t.Errorf("a prefix of a 32-position cache into one of %d: %v, want ok %v", c.limit, err, c.ok)
		}
	}
}
