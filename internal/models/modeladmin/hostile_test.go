package modeladmin

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/testkit"
)

// serviceSlack is what an import may allocate beyond the parse budget:
// the answer's message, path handling and the store's bookkeeping.
const serviceSlack = 1 << 20

// TestImportHostileHeaders imports each file of the hostile GGUF corpus
// through the service the API calls: each is a 400 whose chain holds the
// reader's typed error, within 1 s and within the parse budget, nothing
// enters the catalog, and a real model imports afterwards.
func TestImportHostileHeaders(t *testing.T) {
	root := t.TempDir()
	importDir := filepath.Join(root, "import")
	if err := os.MkdirAll(importDir, 0o700); err != nil {
		t.Fatal(err)
	}
	store := catalog.NewStore(catalog.StoreConfig{ModelsDir: filepath.Join(root, "models"), CustomDir: filepath.Join(root, "cards")})
	m := New(Config{Store: store, ImportDirs: []string{importDir},
		Catalog: func() *catalog.Catalog { c, _ := store.Catalog(); return c }, Refresh: func() {}})
	for i, c := range testkit.HostileGGUFCorpus() {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(importDir, "hostile.gguf")
			in := c.Build()
			if err := os.WriteFile(path, in, 0o600); err != nil {
				t.Fatal(err)
			}
			size := len(in)
			in = nil // the parse's allocations are measured, not the test's
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := m.ImportModel(t.Context(), ImportModelRequest{Path: path, ID: "hostile"})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			var ie *fault.Error
			if !errors.As(err, &ie) || ie.Class.HTTPStatus() != http.StatusBadRequest || ie.Param != "path" {
				t.Fatalf("case %d: err = %v, want a 400 naming the path", i, err)
			}
			if !errors.Is(err, c.Kind) {
				t.Errorf("err = %v does not hold %v", err, c.Kind)
			}
			if len(err.Error()) > 4096 {
				t.Errorf("the answer is %d bytes long", len(err.Error()))
			}
			if took > time.Second {
				t.Errorf("took %v, want at most 1s", took)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			if limit := uint64(gguf.ParseBudget(size)) + serviceSlack; alloc > limit {
				t.Errorf("allocated %d bytes for a %d-byte file, want at most %d", alloc, size, limit)
			}
			t.Logf("%d bytes: %d allocated, %v: %s", size, alloc, took, strings.TrimSpace(err.Error()))
		})
	}
	if c, _ := store.Catalog(); c != nil {
		if _, ok := c.Get("hostile"); ok {
			t.Fatal("a hostile file entered the catalog")
		}
	}
	good, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(importDir, "stories.gguf")
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ImportModel(t.Context(), ImportModelRequest{Path: path}); err != nil {
		t.Fatalf("a real model after the corpus: %v", err)
	}
}
