package hub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/testkit"
	"github.com/skulk/skulk/internal/testkit/hubstandin"
)

// TestAddHostileHeaders adds each file of the hostile GGUF corpus from the
// stand-in Hub with the production header sizes: each is refused with the
// reader's typed error (or, where the file promises more than it holds,
// as truncated or longer than the header limit) within 1 s, with bounded
// allocation, and no card is stored.
func TestAddHostileHeaders(t *testing.T) {
	for i, hc := range testkit.HostileGGUFCorpus() {
		t.Run(hc.Name, func(t *testing.T) {
			// A stand-in of its own, serving the file without LFS: the
			// stand-in hashes every LFS file it holds per request, which
			// would be timed here with the client.
			e := newEnv(t)
			c := e.client(t, func(c *Config) { c.InitialHeaderBytes = DefaultInitialHeaderBytes })
			p := filepath.Join(t.TempDir(), "hostile.gguf")
			in := hc.Build()
			size := int64(len(in))
			if err := os.WriteFile(p, in, 0o600); err != nil {
				t.Fatal(err)
			}
			in = nil
			repo := fmt.Sprintf("o/hostile%d", i)
			e.hub.AddRepo(repo, "", hubstandin.File{Path: "hostile.gguf", Local: p})
			ref, err := ParseRef("hf:" + repo)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, _, err = Add(t.Context(), c, e.store, ref, "")
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			var hte *HeaderTooLargeError
			switch {
			case errors.Is(err, hc.Kind):
			case hc.Kind == gguf.ErrTooLarge && errors.Is(err, gguf.ErrTruncated):
			case errors.As(err, &hte) && size > DefaultMaxHeaderBytes:
			default:
				t.Fatalf("err = %v, want %v", err, hc.Kind)
			}
			// The goal is 1 s (typically 0.3 s); the bound leaves room for a loaded CI machine.
			if took > 3*time.Second {
				t.Errorf("took %v, want under 3 s (goal 1 s)", took)
			}
			// The prefixes read (doubling up to the whole header) and what
			// the stand-in allocates to serve them come on top of the parse.
			read := min(size, DefaultMaxHeaderBytes)
			alloc := after.TotalAlloc - before.TotalAlloc
			if limit := uint64(gguf.ParseBudget(int(read))+8*read) + 4<<20; alloc > limit {
				t.Errorf("allocated %d bytes for a %d-byte file, want at most %d", alloc, size, limit)
			}
			t.Logf("%d bytes: %d allocated, %v: %.200v", size, alloc, took, err)
			if cat, _ := e.store.Catalog(); cat != nil {
				for _, card := range cat.List() {
					if card.Repo != "" {
						t.Errorf("a hostile card was stored: %s from %s", card.ID, card.Repo)
					}
				}
			}
		})
	}
}
