package engine

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/testkit"
)

// TestOpenRefusesOverlappingTensors: a model whose output aliases its
// embeddings would load and produce garbage; Open refuses it instead, and
// the untouched file still loads.
func TestOpenRefusesOverlappingTensors(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "models", "stories260K.gguf")
	crafted := filepath.Join(t.TempDir(), "crafted.gguf")
	testkit.OverlapGGUF(t, src, crafted, "output.weight", "token_embd.weight", 0)
	if m, err := Open(crafted, Options{Threads: 1}); !errors.Is(err, gguf.ErrOverlap) {
		if m != nil {
			m.Close()
		}
		t.Fatalf("Open: %v; want gguf.ErrOverlap", err)
	}
	m, err := Open(src, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}
