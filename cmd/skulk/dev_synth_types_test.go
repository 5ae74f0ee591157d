package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// TestDevSynthLowBitTypes writes a model in each 2–4-bit type with `skulk
// dev synth --type`, checks the matrices are stored in it (or, when rows
// are not whole 256-element blocks, in llama.cpp's fallback type), and that
// the engine generates from it.
func TestDevSynthLowBitTypes(t *testing.T) {
	tests := []struct {
		flag     string
		embd     string
		wantType tensor.Type
	}{
		{"Q2_K", "256", tensor.Q2_K},
		{"q3_k", "256", tensor.Q3_K},
		{"IQ4_NL", "256", tensor.IQ4_NL},
		{"iq4_xs", "256", tensor.IQ4_XS},
		{"MXFP4", "256", tensor.MXFP4},
		{"Q2_K", "64", tensor.Q4_0},
		{"Q3_K", "64", tensor.Q4_0},
		{"IQ4_XS", "64", tensor.IQ4_NL},
	}
	for _, tc := range tests {
		t.Run(tc.flag+"/embd="+tc.embd, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.gguf")
			var out, errb bytes.Buffer
			err := runArgs([]string{"dev", "synth", "--shape", "tiny", "--type", tc.flag, "--layers", "1", "--embd", tc.embd,
				"--heads", "4", "--kv-heads", "2", "--ff", "256", "--vocab", "300", "--ctx", "64", "--out", p}, stdio{strings.NewReader(""), &out, &errb})
			if err != nil {
				t.Fatalf("%v: %s", err, errb.String())
			}
			f, err := gguf.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, ti := range f.Tensors {
				if ti.Name == "blk.0.attn_q.weight" && ti.Type != tc.wantType {
					t.Errorf("attn_q is %s, want %s", ti.Type, tc.wantType)
				}
			}
			f.Close()
			m, err := engine.Open(p, engine.Options{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			n := 0
			if _, err := m.Generate(t.Context(), []int32{1, 5, 9}, engine.GenerateParams{MaxTokens: 3, Sample: sample.Params{Temperature: 0}},
				func(engine.Token) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatal("generated nothing")
			}
		})
	}
}
