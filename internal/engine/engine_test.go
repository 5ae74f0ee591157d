package engine

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/tensor"
	"github.com/skulk/skulk/internal/platform/config"
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

// TestKernelsFromConfig: SKULK_KERNELS=generic, read by config and passed
// down as an option, loads a model on the portable kernels; unset, the
// model gets the best the CPU has; an unknown cap fails the load.
func TestKernelsFromConfig(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "models", "stories260K.gguf")
	tests := []struct {
		env  string
		want string // the kernel set's name
	}{
		{env: "generic", want: "generic"},
		{env: "", want: tensor.Best().Name()},
	}
	for _, tt := range tests {
		e, err := config.EngineFromEnv(func(k string) string {
			if k == "SKULK_KERNELS" {
				return tt.env
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		m, err := Open(src, Options{Threads: 1, Kernels: e.Kernels})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Shard.Kernels(); got != tt.want {
			t.Errorf("SKULK_KERNELS=%q: the model computes with %s, want %s", tt.env, got, tt.want)
		}
		m.Close()
	}
	if _, err := Open(src, Options{Threads: 1, Kernels: "sse9"}); !errors.Is(err, tensor.ErrUnknownCap) {
		t.Fatalf("an unknown cap: %v, want tensor.ErrUnknownCap", err)
	}
}
