package tensor_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// The synthetic models in shared/models/synthetic were quantized by
// llama.cpp's own quantizer (no importance matrix) from the F32 base model.
// Quantizing the same F32 weights here must give the same bytes, and
// dequantizing llama.cpp's bytes must land near the F32 weights.

func sharedDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "..", "shared", "models", "synthetic")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("synthetic models not present at %s (they live in the shared checkout next to the repo): %v", dir, err)
	}
	return dir
}

func openGGUF(t *testing.T, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func f32s(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

func TestQuantizeMatchesLlamaCpp(t *testing.T) {
	dir := sharedDir(t)
	base := openGGUF(t, filepath.Join(dir, "synth-llama-f32.gguf"))
	cases := []struct {
		file string
		typ  tensor.Type
		// maxRelRMS bounds ‖dequant(llama.cpp) − f32‖ / ‖f32‖ per tensor.
		maxRelRMS float64
	}{
		{"synth-llama-f16.gguf", tensor.F16, 5e-4},
		{"synth-llama-bf16.gguf", tensor.BF16, 4e-3},
		{"synth-llama-q8_0.gguf", tensor.Q8_0, 0.01},
		{"synth-llama-q4_0.gguf", tensor.Q4_0, 0.15},
		{"synth-llama-q4_1.gguf", tensor.Q4_1, 0.12},
		{"synth-llama-q5_0.gguf", tensor.Q5_0, 0.075},
		{"synth-llama-q5_1.gguf", tensor.Q5_1, 0.06},
		{"synth-llama-q4_k.gguf", tensor.Q4_K, 0.12},
		{"synth-llama-q5_k.gguf", tensor.Q5_K, 0.06},
		{"synth-llama-q6_k.gguf", tensor.Q6_K, 0.03},
		// Made by testdata/synthetic/gen/run.sh and kept in the repository.
		{"synth-llama-q2_k.gguf", tensor.Q2_K, 0.45},
		{"synth-llama-q3_k.gguf", tensor.Q3_K, 0.22},
		{"synth-llama-iq4_nl.gguf", tensor.IQ4_NL, 0.12},
		{"synth-llama-iq4_xs.gguf", tensor.IQ4_XS, 0.12},
		{"synth-llama-mxfp4.gguf", tensor.MXFP4, 0.16},
	}
	for _, c := range cases {
		t.Run(c.typ.String(), func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			if repo := filepath.Join("..", "..", "..", "testdata", "synthetic", c.file); fileExists(repo) {
				path = repo
			}
			f := openGGUF(t, path)
			checked := 0
			for _, ti := range f.Tensors {
				if ti.Type != c.typ {
					continue
				}
				got, err := f.TensorData(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				raw, err := base.TensorData(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				src := f32s(raw)
				mine, err := tensor.Quantize(c.typ, src)
				if err != nil {
					t.Fatalf("%s: %v", ti.Name, err)
				}
				if bad := diffBlocks(mine, got, c.typ.BlockBytes()); bad > 0 {
					t.Errorf("%s: %d of %d blocks differ from llama.cpp's quantizer", ti.Name, bad, len(got)/c.typ.BlockBytes())
				}
				deq := make([]float32, len(src))
				if err := tensor.Dequantize(c.typ, got, deq); err != nil {
					t.Fatal(err)
				}
				if r := relRMS(deq, src); r > c.maxRelRMS {
					t.Errorf("%s: dequantized llama.cpp weights have relative RMS error %.4g > %.4g", ti.Name, r, c.maxRelRMS)
				}
				checked++
			}
			if checked == 0 {
				t.Fatalf("%s holds no %s tensors", c.file, c.typ)
			}
		})
	}
}

func fileExists(path string) bool { _, err := os.Stat(path); return err == nil }

func diffBlocks(a, b []byte, blockBytes int) int {
	if len(a) != len(b) {
		return len(b) / blockBytes
	}
	bad := 0
	for i := 0; i < len(a); i += blockBytes {
		if string(a[i:i+blockBytes]) != string(b[i:i+blockBytes]) {
			bad++
		}
	}
	return bad
}

func relRMS(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(num / den)
}
