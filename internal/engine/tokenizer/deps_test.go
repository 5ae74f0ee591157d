package tokenizer

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the engine dependency rule: engine packages import only
// engine packages, the standard library and golang.org/x/sys.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/skulk/skulk/internal/engine/") && !strings.HasPrefix(p, "golang.org/x/sys/") {
			t.Errorf("forbidden dependency %s", p)
		}
	}
}
