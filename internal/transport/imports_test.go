package transport

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps this I/O adapter free of domain services (DESIGN.md,
// dependency rules): only the standard library and the listed modules.
func TestImports(t *testing.T) {
	allowed := []string{
		"github.com/quic-go/quic-go",
		"github.com/skulk/skulk/internal/ids",
		"github.com/skulk/skulk/internal/transport/clusterkey",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(p, "/"); !strings.Contains(first, ".") {
				continue // standard library
			}
			ok := false
			for _, a := range allowed {
				ok = ok || p == a || strings.HasPrefix(p, a+"/")
			}
			if !ok {
				t.Errorf("%s imports %q", name, p)
			}
		}
	}
}
