package grammar

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the engine dependency rule; grammar itself needs only
// the standard library.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/skulk/skulk/internal/engine/grammar" {
			t.Errorf("forbidden dependency %s", p)
		}
	}
}
