package gguf_test

import (
	"errors"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/testkit"
)

// TestHostileHeaders refuses every crafted header of the corpus with a
// typed error within 1 s, both as a whole file and as a header prefix, and
// allocating no more than gguf.ParseBudget of its size: 16 bytes per input
// byte plus 1 MiB, however the header is built.
func TestHostileHeaders(t *testing.T) {
	cs := testkit.HostileGGUFCorpus()
	if len(cs) < 20 {
		t.Fatalf("the corpus has %d cases, want at least 20", len(cs))
	}
	for _, c := range cs {
		t.Run(c.Name, func(t *testing.T) {
			in := c.Build()
			for _, p := range []struct {
				name  string
				parse func([]byte) (*gguf.File, error)
			}{{"Parse", gguf.Parse}, {"ParseHeader", gguf.ParseHeader}} {
				err, alloc, took := gguf.ParseMeasured(p.parse, in)
				kind := c.Kind
				if p.name == "ParseHeader" && kind == gguf.ErrTooLarge {
					kind = gguf.ErrTruncated // a prefix may be too short for what it promises
				}
				var fe *gguf.FormatError
				if !errors.Is(err, kind) || !errors.As(err, &fe) {
					t.Fatalf("%s: err = %v, want a *FormatError of kind %v", p.name, err, kind)
				}
				// The goal is 1 s (typically 0.3 s); the bound leaves room for a loaded CI machine.
				if took > 3*time.Second {
					t.Errorf("%s: took %v, want under 3 s (goal 1 s)", p.name, took)
				}
				if limit := uint64(gguf.ParseBudget(len(in))); alloc > limit {
					t.Errorf("%s: allocated %d bytes for a %d-byte file, want at most %d", p.name, alloc, len(in), limit)
				}
				t.Logf("%s: %d bytes in, %d allocated (%.2f per byte), %v", p.name, len(in), alloc, float64(alloc)/float64(len(in)), took)
			}
		})
	}
}
