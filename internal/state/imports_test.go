package state

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPureImports enforces the pure core (DESIGN.md dependency rules): no
// I/O, clocks, locks, logging or randomness may enter Apply's package.
func TestPureImports(t *testing.T) {
	forbidden := map[string]bool{"os": true, "net": true, "time": true, "sync": true, "log": true, "math/rand": true, "math/rand/v2": true}
	prefixes := []string{"os/", "net/", "sync/", "log/"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
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
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			bad := forbidden[p]
			for _, pre := range prefixes {
				bad = bad || strings.HasPrefix(p, pre)
			}
			if bad {
				t.Errorf("%s imports %q; state must stay pure", name, p)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
