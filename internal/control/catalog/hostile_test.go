package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/testkit"
)

// measure runs f and returns how long it took and what the runtime
// allocated meanwhile.
func measure(f func()) (time.Duration, uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return took, after.TotalAlloc - before.TotalAlloc
}

// TestHostileGGUFInStore runs the hostile GGUF corpus through the store:
// Import refuses each with the reader's typed error; and a hostile file that
// is installed anyway (its sidecar rewritten to match, as by someone with
// access to the models directory) survives the start-up rescan, which
// hashes but never parses, and is refused with the typed error, within 1 s
// and the parse budget, where it is first parsed (its tensor sums).
func TestHostileGGUFInStore(t *testing.T) {
	for _, c := range testkit.HostileGGUFCorpus() {
		t.Run(c.Name, func(t *testing.T) {
			root := t.TempDir()
			cfg := StoreConfig{ModelsDir: filepath.Join(root, "models"), CustomDir: filepath.Join(root, "cards")}
			s := NewStore(cfg)
			in := c.Build()
			src := filepath.Join(root, "hostile.gguf")
			if err := os.WriteFile(src, in, 0o600); err != nil {
				t.Fatal(err)
			}
			var err error
			took, alloc := measure(func() { _, err = s.Import(t.Context(), "hostile", src) })
			if !errors.Is(err, c.Kind) {
				t.Fatalf("import: %v, want %v", err, c.Kind)
			}
			checkBounded(t, "import", len(in), took, alloc)

			card, err := s.Import(t.Context(), "m", storiesPath)
			if err != nil {
				t.Fatal(err)
			}
			inst, err := s.Locate(card)
			if err != nil {
				t.Fatal(err)
			}
			installHostile(t, inst, in)
			size := len(in)
			in = nil

			s = NewStore(cfg) // the node starts again
			cat, errs := s.Catalog()
			if _, ok := cat.Get("m"); !ok || len(errs) != 0 {
				t.Fatalf("the rescan lost the card (it must not parse the file): %v", errs)
			}
			took, alloc = measure(func() { _, _, err = s.TensorSums(t.Context(), card) })
			if !errors.Is(err, c.Kind) {
				t.Fatalf("tensor sums: %v, want %v", err, c.Kind)
			}
			checkBounded(t, "tensor sums", size, took, alloc)
		})
	}
}

// installHostile puts b in place of the installed file of inst with a
// sidecar that matches it and records no tensor sums.
func installHostile(t *testing.T, inst Installation, b []byte) {
	t.Helper()
	p := inst.Paths[0]
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := readSidecar(inst.Dir)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	st := statOf(fi)
	sc.Manifest[0] = ManifestEntry{Path: sc.Manifest[0].Path, Size: st.size, SHA256: hex.EncodeToString(sum[:]), ModTimeNs: st.mtimeNs, Inode: st.inode}
	j, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inst.Dir, SidecarPath), j, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkBounded holds a refusal of an n-byte file to 1 s and to the parse
// budget plus 1 MiB for the store's own bookkeeping.
func checkBounded(t *testing.T, what string, n int, took time.Duration, alloc uint64) {
	t.Helper()
	// The goal is 1 s (typically 0.3 s); the bound leaves room for a loaded CI machine.
	if took > 3*time.Second {
		t.Errorf("%s took %v, want under 3 s (goal 1 s)", what, took)
	}
	if limit := uint64(gguf.ParseBudget(n)) + 1<<20; alloc > limit {
		t.Errorf("%s allocated %d bytes for a %d-byte file, want at most %d", what, alloc, n, limit)
	}
	t.Logf("%s: %d bytes: %d allocated, %v", what, n, alloc, took)
}
