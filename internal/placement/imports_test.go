package placement

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The planner must reach the same verdict on every node from the same
// values, so it may not reach for the clock, the network, the disk,
// randomness or shared memory, and it uses the standard library only.
var forbiddenImports = []string{"os", "net", "time", "sync", "log", "math/rand", "unsafe", "runtime"}

// badImports returns the imports in src that break the rule above.
func badImports(t *testing.T, name string, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		thirdParty := strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
		if thirdParty || slices.ContainsFunc(forbiddenImports, func(f string) bool {
			return path == f || strings.HasPrefix(path, f+"/")
		}) {
			bad = append(bad, path)
		}
	}
	return bad
}

func TestImportsArePure(t *testing.T) {
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
		checked++
		if bad := badImports(t, name, src); len(bad) > 0 {
			t.Errorf("%s imports %v; placement is pure: no %v, standard library only", name, bad, forbiddenImports)
		}
	}
	if checked == 0 {
		t.Fatal("no non-test Go files found; the check would pass vacuously")
	}
}

// The checker itself must catch what it claims to.
func TestBadImports(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"clean", `package p; import ("fmt"; "math/big"; "slices")`, nil},
		{"clock", `package p; import "time"`, []string{"time"}},
		{"network_subpackage", `package p; import "net/http"`, []string{"net/http"}},
		{"randomness_v2", `package p; import r "math/rand/v2"`, []string{"math/rand/v2"}},
		{"third_party", `package p; import "github.com/skulk/skulk/internal/ids"`, []string{"github.com/skulk/skulk/internal/ids"}},
		{"prefix_is_not_a_match", `package p; import "osext"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := badImports(t, "x.go", []byte(tt.src))
			if !slices.Equal(got, tt.want) {
				t.Errorf("badImports = %v, want %v", got, tt.want)
			}
		})
	}
}
