package event

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps event vocabulary: the standard library, the CBOR codec
// and ids, nothing else (DESIGN.md, package layout).
func TestImports(t *testing.T) {
	allowed := map[string]bool{
		"github.com/fxamacker/cbor/v2":        true,
		"github.com/skulk/skulk/internal/ids": true,
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
			first, _, _ := strings.Cut(p, "/")
			if strings.Contains(first, ".") && !allowed[p] {
				t.Errorf("%s imports %q", name, p)
			}
		}
	}
}
