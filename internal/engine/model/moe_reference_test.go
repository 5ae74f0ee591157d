package model

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/skulk/skulk/internal/engine/synth"
)

// moeArchs are the mixture-of-experts architectures with llama.cpp
// references in testdata/synthetic/synth-ARCH.json (bench/synthref.sh).
var moeArchs = []string{"qwen3moe", "glm4moe", "deepseek2", "gpt-oss"}

// archModel writes the model `skulk dev synth --arch arch` writes (seed 1)
// into a temporary directory and returns its path and sha256.
func archModel(t testing.TB, arch string) (string, string) {
	t.Helper()
	shape, ok := synth.ArchShapes()[arch]
	if !ok {
		t.Fatalf("synth has no default shape for %s", arch)
	}
	mix, ok := synth.Shipped(arch)
	if !ok {
		t.Fatalf("synth has no shipped types for %s", arch)
	}
	p := filepath.Join(t.TempDir(), "synth-"+arch+".gguf")
	if err := synth.WriteFileMix(p, shape, mix, rand.New(rand.NewPCG(1, 0))); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return p, hex.EncodeToString(sum[:])
}

// referenceModel is archModel's path, once its bytes are those llama.cpp's
// reference was made from (sha256, by command). Go may fuse multiply-adds
// on other architectures, so the synthesizer's quantized bytes can differ
// there: the test is skipped saying so.
func referenceModel(t testing.TB, arch, sha256, command string) string {
	t.Helper()
	path, sum := archModel(t, arch)
	if sum != sha256 {
		if runtime.GOARCH != "amd64" {
			t.Skipf("synth wrote a model with sha256 %s on %s; the reference was made from the amd64 bytes %s", sum, runtime.GOARCH, sha256)
		}
		t.Fatalf("synth wrote a model with sha256 %s; the reference was made from %s (%s): "+
			"rerun bench/synthref.sh %s if the generator changed on purpose", sum, sha256, command, arch)
	}
	return path
}

// TestSyntheticMoEReferences checks the mixture-of-experts architectures
// against llama.cpp's logits on their synthesized models, within the bounds
// of reference/synthetic/README.md for quantized weights: the
// llama.cpp-mimicking path against the main prompts, and exact F32
// activations against llama.cpp's run on its own dequantized F32 copy. The
// model is rebuilt by synth, and must be the file the reference was made
// from (same sha256).
func TestSyntheticMoEReferences(t *testing.T) {
	for _, arch := range moeArchs {
		t.Run(arch, func(t *testing.T) {
			var ref struct {
				synthRef
				Model struct {
					SHA256  string `json:"sha256"`
					Command string `json:"command"`
				} `json:"model"`
			}
			readJSON(t, filepath.Join(repoRoot(), "testdata", "synthetic", "synth-"+arch+".json"), &ref)
			path := referenceModel(t, arch, ref.Model.SHA256, ref.Model.Command)
			s, _ := openShard(t, path, whole, Options{Threads: 2, F32Cache: true})
			t.Logf("mimicking vs llama.cpp: %s", checkAgainst(t, s, ref.Prompts, ref.Tolerance.Mimic))
			if ref.Dequant == nil {
				t.Fatal("the reference has no dequant_f32 section")
			}
			e, _ := openShard(t, path, whole, Options{Threads: 2, ExactActivations: true, F32Cache: true})
			t.Logf("exact activations vs llama.cpp on the dequantized copy: %s", checkAgainst(t, e, ref.Dequant.Prompts, ref.Tolerance.Dequant))
		})
	}
}

func TestTopK(t *testing.T) {
	for _, c := range []struct {
		p    []float32
		k    int
		want []int32
	}{
		{[]float32{0.1, 0.5, 0.2, 0.2}, 2, []int32{1, 2}},
		{[]float32{0.1, 0.5, 0.2, 0.2}, 3, []int32{1, 2, 3}},
		{[]float32{0.4, 0.1, 0.4, 0.1}, 1, []int32{0}},
		{[]float32{1, 2, 3, 4, 5}, 5, []int32{4, 3, 2, 1, 0}},
		{[]float32{3, 1, 2}, 2, []int32{0, 2}},
	} {
		got := make([]int32, c.k)
		topK(c.p, got)
		if !slices.Equal(got, c.want) {
			t.Errorf("topK(%v, %d) = %v, want %v", c.p, c.k, got, c.want)
		}
	}
}

func TestMoEGroups(t *testing.T) {
	// Three tokens, two experts each, of four experts; expert 1 unused.
	sel := []int32{2, 0, 0, 3, 2, 3}
	start, rowOf, pair := make([]int, 5), make([]int, 6), make([]int, 6)
	moeGroups(sel, 4, start, rowOf, pair)
	if want := []int{0, 2, 2, 4, 6}; !slices.Equal(start, want) {
		t.Fatalf("start %v, want %v", start, want)
	}
	for i, e := range sel {
		r := rowOf[i]
		if r < start[e] || r >= start[e+1] || pair[r] != i {
			t.Errorf("pair %d (expert %d) at row %d; expert rows [%d, %d), pair there %d", i, e, r, start[e], start[e+1], pair[r])
		}
	}
}
