package modeladmin

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/testkit"
)

// importTree lays out an import directory beside an outside one, with links
// that stay inside and links that escape, and returns its (resolved) root.
func importTree(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"import/sub", "outside", "import-evil"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"import/a.gguf", "import/sub/b.gguf", "import/..dots.gguf", "outside/secret.gguf", "import-evil/x.gguf"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("GGUF"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"import/escape.gguf":   "../outside/secret.gguf",
		"import/abs-escape":    filepath.Join(root, "outside", "secret.gguf"),
		"import/outdir":        "../outside",
		"import/inner.gguf":    "sub/b.gguf",
		"import/dangling.gguf": "nowhere.gguf",
		"outside/in.gguf":      "../import/a.gguf",
		"linked-import":        "import",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestResolveImport(t *testing.T) {
	root := importTree(t)
	in := func(p string) string { return filepath.Join(root, p) }
	dirs := []string{in("import")}
	cases := []struct {
		name string
		path string
		dirs []string
		want string // "" when refused
	}{
		{"inside", in("import/a.gguf"), dirs, in("import/a.gguf")},
		{"in a subdirectory", in("import/sub/b.gguf"), dirs, in("import/sub/b.gguf")},
		{"a name starting with dots", in("import/..dots.gguf"), dirs, in("import/..dots.gguf")},
		{"dot-dot that stays inside", in("import/sub/../a.gguf"), dirs, in("import/a.gguf")},
		{"link that stays inside", in("import/inner.gguf"), dirs, in("import/sub/b.gguf")},
		{"through a linked import directory", in("linked-import/a.gguf"), []string{in("linked-import")}, in("import/a.gguf")},
		{"second directory", in("outside/secret.gguf"), []string{in("import"), in("outside")}, in("outside/secret.gguf")},
		{"outside", in("outside/secret.gguf"), dirs, ""},
		{"dot-dot traversal", in("import/../outside/secret.gguf"), dirs, ""},
		{"unclean dot-dot traversal", in("import") + "/sub/../../outside/secret.gguf", dirs, ""},
		{"relative link escaping", in("import/escape.gguf"), dirs, ""},
		{"absolute link escaping", in("import/abs-escape"), dirs, ""},
		{"linked directory escaping", in("import/outdir/secret.gguf"), dirs, ""},
		{"link from outside into the directory", in("outside/in.gguf"), dirs, ""},
		{"sibling sharing the prefix", in("import-evil/x.gguf"), dirs, ""},
		{"the directory itself", in("import"), dirs, ""},
		{"dangling link inside", in("import/dangling.gguf"), dirs, ""},
		{"nonexistent inside", in("import/missing.gguf"), dirs, ""},
		{"nonexistent outside", in("outside/missing.gguf"), dirs, ""},
		{"/etc/shadow", "/etc/shadow", dirs, ""},
		{"/nonexistent", "/nonexistent", dirs, ""},
		{"/", "/", dirs, ""},
		{"relative", "import/a.gguf", dirs, ""},
		{"empty", "", dirs, ""},
		{"no directories", in("import/a.gguf"), nil, ""},
		{"a missing directory", in("import/a.gguf"), []string{in("gone"), in("outside")}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := resolveImport(c.path, c.dirs)
			if c.want != "" {
				if err != nil || got != c.want {
					t.Fatalf("resolveImport(%q) = %q, %v; want %q", c.path, got, err, c.want)
				}
				return
			}
			// Refused: the answer is a function of the path's text alone.
			var pe *ImportPathError
			if got != "" || !errors.As(err, &pe) || err.Error() != (&ImportPathError{Path: c.path}).Error() || pe.HTTPStatus() != http.StatusNotFound {
				t.Fatalf("resolveImport(%q) = %q, %v; want the *ImportPathError for the path", c.path, got, err)
			}
		})
	}
	// Existing or not, a file or not: the same answer, once the path is
	// taken out of it.
	answer := func(p string) string {
		_, err := resolveImport(p, dirs)
		return strings.ReplaceAll(err.Error(), p, "PATH")
	}
	if a, b := answer("/etc/shadow"), answer("/nonexistent"); a != b {
		t.Fatalf("different answers:\n%s\n%s", a, b)
	}
}

// TestImportModelDirs runs ImportModel over a real store: the loopback
// directories count only for loopback requests, and a file whose tensors
// overlap is a 400 that names both tensors.
func TestImportModelDirs(t *testing.T) {
	root := t.TempDir()
	importDir, home := filepath.Join(root, "import"), filepath.Join(root, "home")
	for _, d := range []string{importDir, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	good, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(importDir, "stories.gguf"), filepath.Join(home, "mine.gguf")} {
		if err := os.WriteFile(p, good, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	testkit.OverlapGGUF(t, filepath.Join(importDir, "stories.gguf"), filepath.Join(importDir, "aliased.gguf"), "output.weight", "token_embd.weight", 0)
	store := catalog.NewStore(catalog.StoreConfig{ModelsDir: filepath.Join(root, "models"), CustomDir: filepath.Join(root, "cards")})
	m := New(Config{Store: store, ImportDirs: []string{importDir}, LoopbackImportDirs: []string{home},
		Catalog: func() *catalog.Catalog { c, _ := store.Catalog(); return c }, Refresh: func() {}})
	cases := []struct {
		name     string
		req      ImportModelRequest
		status   int // 200 when imported
		contains []string
	}{
		{"import directory", ImportModelRequest{Path: filepath.Join(importDir, "stories.gguf")}, 200, nil},
		{"home from loopback", ImportModelRequest{Path: filepath.Join(home, "mine.gguf"), FromLoopback: true}, 200, nil},
		{"home from elsewhere", ImportModelRequest{Path: filepath.Join(home, "mine.gguf"), ID: "remote"}, 404, []string{"outside the node's import directories"}},
		{"overlapping tensors", ImportModelRequest{Path: filepath.Join(importDir, "aliased.gguf")}, 400, []string{"tensors overlap", `"token_embd.weight"`, `"output.weight"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.ImportModel(t.Context(), c.req)
			status := 200
			var se interface{ HTTPStatus() int }
			switch {
			case errors.As(err, &se):
				status = se.HTTPStatus()
			case err != nil:
				status = fault.ClassOf(err).HTTPStatus()
			}
			if status != c.status {
				t.Fatalf("status %d (%v), want %d", status, err, c.status)
			}
			for _, s := range c.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%v does not say %s", err, s)
				}
			}
		})
	}
	c, _ := store.Catalog()
	for id, want := range map[string]bool{"stories": true, "mine": true, "remote": false, "aliased": false} {
		if _, ok := c.Get(id); ok != want {
			t.Errorf("model %s in the catalog: %v, want %v", id, ok, want)
		}
	}
}
