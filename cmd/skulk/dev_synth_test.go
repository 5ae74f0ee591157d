package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/synth"
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
		{"dense-shape-moe-arch", []string{"--arch", "qwen3moe", "--shape", "tiny", "--out", "x.gguf"}},
		{"moe-shape-dense-arch", []string{"--arch", "llama", "--shape", "moe-30b-a3b-mini", "--out", "x.gguf"}},
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

// TestDevSynthArchs writes each mixture-of-experts architecture, (llama4 too), phi3, gemma3 and mistral3,
// with no flag but --arch and --out: a model of a few MB in the types its real
// files ship, byte for byte the one the llama.cpp reference in
// testdata/synthetic was made from, which the engine loads and generates
// from.
func TestDevSynthArchs(t *testing.T) {
	for _, arch := range []string{"qwen3moe", "glm4moe", "deepseek2", "gpt-oss", "phi3", "gemma3", "mistral3", "llama4"} {
		t.Run(arch, func(t *testing.T) {
			// The Q4_K_M mix; gpt-oss ships in MXFP4_MOE: MXFP4 experts,
			// Q8_0 elsewhere.
			mix, expertType := []string{"Q4_K", "Q6_K"}, ""
			if arch == "gpt-oss" {
				mix, expertType = []string{"MXFP4", "Q8_0"}, "MXFP4"
			}
			p := filepath.Join(t.TempDir(), arch+".gguf")
			var out, errb bytes.Buffer
			if err := runArgs([]string{"dev", "synth", "--arch", arch, "--out", p}, stdio{strings.NewReader(""), &out, &errb}); err != nil {
				t.Fatalf("%v: %s", err, errb.String())
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > 8<<20 {
				t.Errorf("%d bytes, want a few MB", len(b))
			}
			var ref struct {
				Model struct {
					SHA256 string `json:"sha256"`
				} `json:"model"`
			}
			rb, err := os.ReadFile(filepath.Join("..", "..", "testdata", "synthetic", "synth-"+arch+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(rb, &ref); err != nil {
				t.Fatal(err)
			}
			// Go may fuse multiply-adds off amd64, where the bytes can differ.
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != ref.Model.SHA256 && runtime.GOARCH == "amd64" {
				t.Errorf("sha256 %x, the reference's model %s", sum, ref.Model.SHA256)
			}
			f, err := gguf.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			types := map[string]bool{}
			for _, ti := range f.Tensors {
				types[ti.Type.String()] = true
				if expertType != "" && strings.HasSuffix(ti.Name, "_exps.weight") && ti.Type.String() != expertType {
					t.Errorf("%s is %s, want %s", ti.Name, ti.Type, expertType)
				}
			}
			f.Close()
			if !types[mix[0]] || !types[mix[1]] {
				t.Errorf("tensor types %v, want the mix of %v", types, mix)
			}
			m, err := engine.Open(p, engine.Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Config.Arch != arch || (m.Config.MoE.NExpert > 0) != synth.IsMoE(arch) {
				t.Fatalf("loaded %s with %d experts", m.Config.Arch, m.Config.MoE.NExpert)
			}
			prompt := m.Tok.Encode("Hello world", tokenizer.EncodeOptions{AddSpecial: true})
			st, err := m.Generate(t.Context(), prompt, engine.GenerateParams{MaxTokens: 8, Sample: sample.Params{Temperature: 0}},
				func(engine.Token) error { return nil })
			if err != nil || st.GeneratedTokens == 0 {
				t.Fatalf("generate: %v, %+v", err, st)
			}
		})
	}
}
