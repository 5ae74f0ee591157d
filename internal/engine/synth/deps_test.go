package synth

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the engine's dependency rule: synth imports only
// the standard library, golang.org/x/sys and other engine packages.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Skipf("go list unavailable: %v: %s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/skulk/skulk/internal/engine/") && !strings.HasPrefix(p, "golang.org/x/sys/") {
			t.Errorf("forbidden dependency %s", p)
		}
	}
}
