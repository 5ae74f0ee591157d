package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
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
	p, ok := findVocab(name)
	if !ok {
		t.Skipf("missing ggml-vocab-%s.gguf (looked in testdata/vocab and ../shared/models/vocab)", name)
	}
	return p
}

func findVocab(name string) (string, bool) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	base := "ggml-vocab-" + name + ".gguf"
	for _, p := range []string{
		filepath.Join(root, "testdata", "vocab", base),
		filepath.Join(root, "..", "shared", "models", "vocab", base),
	} {
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	return "", false
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

// vocabs loads every fixture vocabulary once per test binary; the result is
// never modified afterwards. Missing files are simply absent.
var vocabs = sync.OnceValues(func() (map[string]*Tokenizer, error) {
	m := map[string]*Tokenizer{}
	for _, name := range vocabNames {
		path, ok := findVocab(name)
		if !ok {
			continue
		}
		f, err := gguf.Open(path)
		if err != nil {
			return nil, err
		}
		tok, err := FromGGUF(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		m[name] = tok
	}
	return m, nil
})

// loadVocab returns a fixture vocabulary, skipping the test when its file
// is missing.
func loadVocab(t testing.TB, name string) *Tokenizer {
	t.Helper()
	vocabPath(t, name)
	m, err := vocabs()
	if err != nil {
		t.Fatal(err)
	}
	return m[name]
}
