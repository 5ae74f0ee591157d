package chat

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps the package on the standard library and the Jinja
// engine.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if imp != "github.com/ardanlabs/jinja" && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
			t.Errorf("forbidden import %s", imp)
		}
	}
}
