package synth

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// TestWriteFileMatchesBuild checks that the streaming writer produces exactly
// the bytes of the in-memory one, for quantized, plain, tied and untied
// shapes, including a matrix whose rows fall back to another type.
func TestWriteFileMatchesBuild(t *testing.T) {
	tests := []struct {
		name  string
		shape Shape
		typ   tensor.Type
	}{
		{"llama-q8_0-tied", Shape{Name: "a", Arch: "llama", NEmbd: 64, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 96, NVocab: 300, RopeBase: 10000, Tied: true, CtxLen: 128}, tensor.Q8_0},
		{"llama-q4_k-fallback", Shape{Name: "b", Arch: "llama", NEmbd: 256, NLayer: 1, NHead: 4, NFF: 96, NVocab: 300, RopeBase: 10000, CtxLen: 128}, tensor.Q4_K},
		{"qwen3-f32", Shape{Name: "c", Arch: "qwen3", NEmbd: 32, NLayer: 2, NHead: 2, NHeadKV: 1, HeadDim: 16, NFF: 48, NVocab: 400, RopeBase: 1e6, CtxLen: 64}, tensor.F32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Build(tt.shape, tt.typ, rand.New(rand.NewPCG(7, 7)))
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if _, err := w.WriteTo(&want); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "m.gguf")
			if err := WriteFile(p, tt.shape, tt.typ, rand.New(rand.NewPCG(7, 7))); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("streamed file differs from Build's: %d vs %d bytes", len(got), want.Len())
			}
			f, err := gguf.Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if toks, _ := f.Strings("tokenizer.ggml.tokens"); len(toks) != tt.shape.NVocab {
				t.Errorf("%d vocabulary entries, want %d", len(toks), tt.shape.NVocab)
			}
		})
	}
}

// TestDeterministicAcrossCPUs checks that the bytes do not depend on how
// many goroutines drew the chunks.
func TestDeterministicAcrossCPUs(t *testing.T) {
	s := Shape{Name: "d", Arch: "llama", NEmbd: 128, NLayer: 1, NHead: 4, NFF: 1024, NVocab: 1024, RopeBase: 10000, Tied: true, CtxLen: 64}
	build := func() []byte {
		w, err := Build(s, tensor.Q8_0, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := w.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a := build()
	prev := runtime.GOMAXPROCS(1)
	b := build()
	runtime.GOMAXPROCS(prev)
	if !bytes.Equal(a, b) {
		t.Fatal("output depends on GOMAXPROCS")
	}
}
