package tokenizer

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// repoRoot is the module root, found from this file's location.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate test file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// vocabNames are llama.cpp's vocabulary fixtures exercised by the tests.
var vocabNames = []string{"llama-spm", "phi-3", "llama-bpe", "qwen2", "gpt-2", "deepseek-coder", "falcon", "starcoder", "bert-bge"}

// vocabPath finds ggml-vocab-<name>.gguf in testdata, or in ../shared for the
// files too large to copy; it skips the test when neither exists.
func vocabPath(t testing.TB, name string) string {
	t.Helper()
	root := repoRoot(t)
	file := "ggml-vocab-" + name + ".gguf"
	for _, p := range []string{
		filepath.Join(root, "testdata", "vocab", file),
		filepath.Join(root, "..", "shared", "models", "vocab", file),
	} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("missing %s (looked in testdata/vocab and ../shared/models/vocab)", file)
	return ""
}

// loadGGUF opens a GGUF file and builds its tokenizer.
func loadGGUF(t testing.TB, path string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatalf("tokenizer from %s: %v", path, err)
	}
	return tok
}

// cache of loaded vocabularies, per test binary run.
var loaded = map[string]*Tokenizer{}

func loadVocab(t testing.TB, name string) *Tokenizer {
	t.Helper()
	if tok, ok := loaded[name]; ok {
		return tok
	}
	tok := loadGGUF(t, vocabPath(t, name))
	loaded[name] = tok
	return tok
}
