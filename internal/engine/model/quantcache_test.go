package model

import (
	"errors"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// TestQuantizedCacheReference checks the q8_0 and q4_0 K/V caches against
// llama.cpp's own runs with that cache type (testdata/synthetic/kvref-*,
// made by bench/kvref.sh with flash attention, which llama.cpp needs for a
// quantized V cache).
//
// The engine stores keys and values as llama.cpp does (Hadamard-rotated,
// rounded by ggml's CPU from_float) and scores Q8_0-rounded queries against
// them as its flash attention does, so what remains is last-bit differences
// of the F32 keys and values that reach the quantizer (one lands on the
// other side of a rounding boundary and moves by a quantum) and of the
// softmax order of operations. The bounds follow the synthetic references'
// rule, 2× the worst observation over both cache types, rounded up:
// measured on the F32 model max 1.6e-3 / rms 6.4e-5, on the Q8_0 model
// (whose activation rounding flips on top) max 0.35 / rms 0.05. Each case
// also requires this engine's F32-cache run to fall outside the bound, so
// the check can tell a quantized cache from none.
func TestQuantizedCacheReference(t *testing.T) {
	f32Bound := bound{MaxAbs: 4e-3, RMS: 1.5e-4, Top1: 4e-3}
	q8Bound := bound{MaxAbs: 0.75, RMS: 0.1, Top1: 0.5} // top-1: the synthetic references' Q8_0 bound
	cases := []struct {
		model, typ string
		b          bound
	}{
		{"synth-llama-f32", "q8_0", f32Bound},
		{"synth-llama-f32", "q4_0", f32Bound},
		{"synth-qwen3-q8_0", "q8_0", q8Bound},
		{"synth-qwen3-q8_0", "q4_0", q8Bound},
		// Latent attention, the model `skulk dev synth --arch deepseek2`
		// writes (Q4_K_M weights, checked by its sha256), with the same
		// rule: measured max 0.15 / rms 0.022 (q8_0) and max 2.0 / rms
		// 0.084 (q4_0, whose generated steps meet one near-tie of the
		// expert routing), against max 2.2 / rms 0.2 and more for the
		// other cache types.
		{"synth-deepseek2", "q8_0", bound{MaxAbs: 0.3, RMS: 0.05, Top1: 0.5}},
		{"synth-deepseek2", "q4_0", bound{MaxAbs: 4, RMS: 0.17, Top1: 0.5}},
	}
	for _, tc := range cases {
		t.Run(tc.model+"/"+tc.typ, func(t *testing.T) {
			var ref synthRef
			readJSON(t, filepath.Join(repoRoot(), "testdata", "synthetic", "kvref-"+tc.model+"-"+tc.typ+".json"), &ref)
			var path string
			if arch, ok := strings.CutPrefix(tc.model, "synth-"); ok && slices.Contains(moeArchs, arch) {
				path = archFileForRef(t, arch)
			} else {
				path = findTestFile(t, filepath.Join("synthetic", tc.model+".gguf"), filepath.Join("models", "synthetic", tc.model+".gguf"))
			}
			s, _ := openShard(t, path, whole, Options{Threads: 2, CacheType: tc.typ})
			t.Logf("%s cache vs llama.cpp's %s-cache run: %s", tc.typ, tc.typ, checkAgainst(t, s, ref.Prompts, tc.b))
			f32, _ := openShard(t, path, whole, Options{Threads: 2, F32Cache: true})
			summary, far := checkStats(t, f32, ref.Prompts, bound{MaxAbs: math.Inf(1), RMS: math.Inf(1), Top1: math.Inf(1)})
			t.Logf("F32 cache vs the same run: %s", summary)
			if far.max <= tc.b.MaxAbs && far.rms() <= tc.b.RMS {
				t.Errorf("an unquantized cache is within the bound too (max %.3g, rms %.3g): the check cannot see the cache type", far.max, far.rms())
			}
		})
	}
}

// archFileForRef writes the model `skulk dev synth --arch arch` writes and
// checks it is the one its references were made from (the sha256 its
// synth-ARCH.json records), as TestSyntheticMoEReferences does.
func archFileForRef(t *testing.T, arch string) string {
	t.Helper()
	var ref struct {
		Model struct {
			SHA256 string `json:"sha256"`
		} `json:"model"`
	}
	readJSON(t, filepath.Join(repoRoot(), "testdata", "synthetic", "synth-"+arch+".json"), &ref)
	path, sum := archModel(t, arch)
	switch {
	case sum != ref.Model.SHA256 && runtime.GOARCH != "amd64":
		t.Skipf("synth wrote a model with sha256 %s on %s; the references were made from the amd64 bytes %s", sum, runtime.GOARCH, ref.Model.SHA256)
	case sum != ref.Model.SHA256:
		t.Fatalf("synth wrote a model with sha256 %s; the references were made from %s", sum, ref.Model.SHA256)
	}
	return path
}

// TestRotateIsInvolution checks the Hadamard rotation against its
// definition: orthonormal (norm kept) and its own inverse, for each chunk
// size a cache uses.
func TestRotateIsInvolution(t *testing.T) {
	for _, n := range []int{64, 128, 256} {
		x := make([]float32, 2*n)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*0.7)) * float32(1+i%5)
		}
		y := append([]float32(nil), x...)
		rotate(y, n)
		var nx, ny float64
		for i := range x {
			nx += float64(x[i]) * float64(x[i])
			ny += float64(y[i]) * float64(y[i])
		}
		if math.Abs(nx-ny) > 1e-4*nx {
			t.Errorf("n=%d: norm² %g became %g", n, nx, ny)
		}
		// Row 1 of the Sylvester Hadamard matrix alternates signs.
		var want float64
		for j := 0; j < n; j++ {
			want += float64(x[j]) * float64(1-2*(j%2))
		}
		if got := float64(y[1]) * math.Sqrt(float64(n)); math.Abs(got-want) > 1e-3*math.Abs(want)+1e-3 {
			t.Errorf("n=%d: element 1 is %g·√n, want %g", n, got, want)
		}
		rotate(y, n)
		for i := range x {
			if math.Abs(float64(y[i]-x[i])) > 1e-5*(1+math.Abs(float64(x[i]))) {
				t.Fatalf("n=%d: rotating twice gave %g at %d, want %g", n, y[i], i, x[i])
			}
		}
	}
	if k, v := rotationSizes(64, true); k != 64 || v != 64 {
		t.Errorf("head_dim 64: rotation %d/%d, want 64/64", k, v)
	}
	if k, v := rotationSizes(128, true); k != 128 || v != 64 {
		t.Errorf("head_dim 128: rotation %d/%d, want 128/64", k, v)
	}
	if k, v := rotationSizes(96, true); k != 0 || v != 0 {
		t.Errorf("head_dim 96: rotation %d/%d, want none", k, v)
	}
	if k, _ := rotationSizes(128, false); k != 0 {
		t.Errorf("an fp16 cache is rotated by %d", k)
	}
}

// modelCache is a small synthesized model with a K/V cache type.
type modelCache struct {
	name  string
	model func(*testing.T) string
	cache string
}

// modelCaches are the weight and cache types the step and cache tests run
// over: the small models of smallCases (dense and MoE) with the default
// fp16 cache, and the quantized caches on models whose head widths are a
// whole number of their blocks and of llama.cpp's rotation: a dense one of
// head_dim 64, the MoE one, and latent attention (deepseek2, whose keys
// and values differ in width), with an f32 cache too.
func modelCaches() []modelCache {
	var cs []modelCache
	for _, m := range smallCases() {
		cs = append(cs, modelCache{m.name, m.file, ""})
	}
	wide := func(t *testing.T) string {
		return synthFile(t, synth.Shape{Name: "small-hd64", Arch: "llama", NEmbd: 128, NLayer: 2, NHead: 2, NHeadKV: 1,
			NFF: 256, NVocab: 300, RopeBase: 10000, CtxLen: 2048}, tensor.Q8_0)
	}
	moe := func(t *testing.T) string { return smallMoE(t, tensor.Q8_0) }
	mla := func(t *testing.T) string { return synthFile(t, synth.ArchShapes()["deepseek2"], tensor.Q8_0) }
	// Sliding-window blocks with a rope of their own between global ones.
	gemma := func(t *testing.T) string { return synthFile(t, synth.ArchShapes()["gemma3"], tensor.Q8_0) }
	// A query temperature that steps up at positions 16 and 32, past
	// which the steps run.
	mistral := func(t *testing.T) string { return synthFile(t, synth.ArchShapes()["mistral3"], tensor.Q8_0) }
	return append(cs,
		modelCache{"Q8_0/kv-q8_0", wide, "q8_0"},
		modelCache{"Q8_0/kv-q4_0", wide, "q4_0"},
		modelCache{"qwen3moe-Q8_0/kv-q4_0", moe, "q4_0"},
		modelCache{"deepseek2-Q8_0/kv-q8_0", mla, "q8_0"},
		modelCache{"deepseek2-Q8_0/kv-f32", mla, "f32"},
		modelCache{"gemma3-Q8_0", gemma, ""},
		modelCache{"mistral3-Q8_0", mistral, ""},
	)
}

// TestCacheTypeErrors: a cache type the engine does not know, or one
// whose blocks do not divide the head dimension, is a typed error at load.
func TestCacheTypeErrors(t *testing.T) {
	path := smallModel(t, tensor.F32) // head_dim 16
	for _, name := range []string{"q5_1", "Q8_0", "q8_0", "q4_0"} {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Load(f, Whole(2), Options{Threads: 1, CacheType: name})
		f.Close()
		var ce *CacheTypeError
		if !errors.As(err, &ce) {
			t.Errorf("cache type %q on head_dim 16: %v, want *CacheTypeError", name, err)
		}
	}
	// Latent attention whose keys are whole blocks (48+16) but whose
	// values, the 48-wide latent, are not.
	shape := synth.ArchShapes()["deepseek2"]
	shape.Name, shape.KVLoraRank, shape.RopeDim, shape.HeadDim, shape.KeyLenMLA = "mla-48", 48, 16, 64, 64
	f, err := gguf.Open(synthFile(t, shape, tensor.F32))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, name := range []string{"q8_0", "q4_0"} {
		_, err = Load(f, Whole(shape.NLayer), Options{Threads: 1, CacheType: name})
		var ce *CacheTypeError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "value head width 48") {
			t.Errorf("cache type %q on a 48-wide latent: %v, want *CacheTypeError naming the value width", name, err)
		}
	}
	s, err := Load(f, Whole(shape.NLayer), Options{Threads: 1, CacheType: "f16"})
	if err != nil {
		t.Fatalf("an f16 cache on the same model: %v", err)
	}
	s.Close()
}
