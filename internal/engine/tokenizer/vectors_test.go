package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLlamaCppVectors runs llama.cpp's test-tokenizer-0 vectors: every text
// of ggml-vocab-<name>.gguf.inp must tokenize to the ids on the matching line
// of .out (add_special=false, parse_special=false).
func TestLlamaCppVectors(t *testing.T) {
	for _, name := range vocabNames {
		t.Run(name, func(t *testing.T) {
			tok := loadVocab(t, name)
			dir := filepath.Join(repoRoot(t), "testdata", "vocab")
			inp, err := os.ReadFile(filepath.Join(dir, "ggml-vocab-"+name+".gguf.inp"))
			if err != nil {
				t.Fatal(err)
			}
			outp, err := os.ReadFile(filepath.Join(dir, "ggml-vocab-"+name+".gguf.out"))
			if err != nil {
				t.Fatal(err)
			}
			texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
			if texts[len(texts)-1] == "" {
				texts = texts[:len(texts)-1]
			}
			lines := strings.Split(strings.TrimSuffix(string(outp), "\n"), "\n")
			if len(texts) != len(lines) {
				t.Fatalf("%d texts but %d id lines", len(texts), len(lines))
			}
			pass := 0
			for i, text := range texts {
				want := parseIDs(t, lines[i])
				got := tok.Encode(text, EncodeOptions{})
				if !slices.Equal(got, want) {
					t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, want)
					continue
				}
				pass++
			}
			t.Logf("%s: %d/%d vectors match", name, pass, len(texts))
		})
	}
}

func parseIDs(t *testing.T, line string) []int32 {
	t.Helper()
	ids := []int32{}
	for _, f := range strings.Fields(line) {
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			t.Fatalf("bad id %q: %v", f, err)
		}
		ids = append(ids, int32(v))
	}
	return ids
}
