package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/tokenizer"
)

// TestDevSynthGenerates writes a small model with `skulk dev synth` and
// checks that the engine loads it, with the requested shape, and generates
// from it.
func TestDevSynthGenerates(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.gguf")
	var out, errb bytes.Buffer
	err := runArgs([]string{"dev", "synth", "--shape", "tiny", "--type", "q8_0", "--layers", "2", "--embd", "64",
		"--heads", "4", "--kv-heads", "2", "--ff", "128", "--vocab", "512", "--ctx", "128", "--out", p}, stdio{strings.NewReader(""), &out, &errb})
	if err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	m, err := engine.Open(p, engine.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := m.Config
	if c.NLayer != 2 || c.NEmbd != 64 || c.NHead != 4 || c.NHeadKV != 2 || c.NFF != 128 || c.NVocab != 512 {
		t.Fatalf("loaded shape %+v", c)
	}
	prompt := m.Tok.Encode("Hello world", tokenizer.EncodeOptions{AddSpecial: true})
	var got []int32
	st, err := m.Generate(t.Context(), prompt, engine.GenerateParams{MaxTokens: 8, Sample: sample.Params{Temperature: 0}},
		func(tok engine.Token) error { got = append(got, tok.ID); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.GeneratedTokens == 0 || len(got) == 0 {
		t.Fatalf("generated nothing: %+v", st)
	}
}

func TestDevSynthRejects(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"unknown-shape", []string{"--shape", "huge", "--out", "x.gguf"}},
		{"unknown-type", []string{"--type", "Q3_X", "--out", "x.gguf"}},
		{"unknown-arch", []string{"--arch", "gpt2", "--out", "x.gguf"}},
		{"no-out", []string{"--shape", "tiny"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := runArgs(append([]string{"dev", "synth"}, tt.args...), stdio{strings.NewReader(""), &out, &errb})
			if e, ok := err.(*exitError); !ok || e.code != 2 || errb.Len() == 0 {
				t.Fatalf("got %v, want a usage error", err)
			}
		})
	}
}
