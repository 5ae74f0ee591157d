package node_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/testkit"
)

// TestModelImportDirs runs a node whose user's home is a fresh directory. A
// file in the default import directory imports; every path outside the
// import directories gets one answer, whether it exists or not (a secret, a
// missing file, a real GGUF elsewhere, a link out of the import directory,
// a traversal); a file whose tensors overlap is refused naming both; and the
// README's commands (import ./FILE from the home directory, show, rm
// --files) work.
func TestModelImportDirs(t *testing.T) {
	userHome, home := t.TempDir(), t.TempDir()
	n := startNode(t, home, "HOME="+userHome, "SKULK_OFFLINE=1")
	importDir := filepath.Join(home, "models", "import")
	if fi, err := os.Stat(importDir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the default import directory: %v %v", fi, err)
	}
	good, err := os.ReadFile(storiesFile)
	if err != nil {
		t.Fatal(err)
	}
	dropped := filepath.Join(importDir, "stories.gguf")
	if err := os.WriteFile(dropped, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, b := n.do("POST", "/models/import", map[string]any{"path": dropped, "id": "dropped"}); code != 200 {
		t.Fatalf("import from the import directory: %d %s", code, b)
	}
	if m := n.catalogEntries()["dropped"]; !m.Installed || m.StorageBytes != storiesStorage {
		t.Fatalf("imported model %+v", m)
	}

	// Outside: one status and one body, but for the path it repeats.
	elsewhere, err := filepath.Abs(storiesFile)
	if err != nil {
		t.Fatal(err)
	}
	escape := filepath.Join(importDir, "escape.gguf")
	if err := os.Symlink(elsewhere, escape); err != nil {
		t.Fatal(err)
	}
	first := ""
	for _, p := range []string{
		"/etc/shadow", "/no/such/file", "/etc", elsewhere, escape,
		filepath.Join(importDir, "missing.gguf"),
		importDir + strings.Repeat("/..", 20) + "/etc/passwd",
	} {
		code, b := n.do("POST", "/models/import", map[string]any{"path": p})
		body := string(bytes.ReplaceAll(b, []byte(p), []byte("PATH")))
		if code != 404 || !strings.Contains(body, `no importable file at \"PATH\"`) {
			t.Fatalf("import %s: %d %s", p, code, b)
		}
		if first == "" {
			first = body
		} else if body != first {
			t.Fatalf("import %s answers\n%s\nnot, like /etc/shadow,\n%s", p, body, first)
		}
	}
	long := "/" + strings.Repeat("x", 5000)
	if code, b := n.do("POST", "/models/import", map[string]any{"path": long}); code != 404 || len(b) > 1000 || !strings.Contains(string(b), "(5001 bytes)") {
		t.Fatalf("import of a 5001-byte path: %d, %d bytes: %.300s", code, len(b), b)
	}

	aliased := filepath.Join(importDir, "aliased.gguf")
	testkit.OverlapGGUF(t, storiesFile, aliased, "output.weight", "token_embd.weight", 0)
	code, b := n.do("POST", "/models/import", map[string]any{"path": aliased})
	if code != 400 || !strings.Contains(string(b), "tensors overlap") || !strings.Contains(string(b), `tensor \"token_embd.weight\"`) || !strings.Contains(string(b), `tensor \"output.weight\"`) {
		t.Fatalf("import of aliased tensors: %d %s", code, b)
	}
	if _, ok := n.catalogEntries()["aliased"]; ok {
		t.Fatal("the aliased file entered the catalog")
	}

	// The README: import a file from the current directory under the home
	// of the node's user (the CLI runs on the node's machine), show it,
	// remove it.
	work := filepath.Join(userHome, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "my-model.gguf"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(skulkBin, "models", "import", "./my-model.gguf", "--id", "my-model", "--host", n.base)
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "imported my-model from "+filepath.Join(work, "my-model.gguf")) {
		t.Fatalf("skulk models import ./my-model.gguf: %v: %s", err, out)
	}
	if code, out := n.cli("models", "show", "my-model"); code != 0 || !strings.Contains(out, "imported file") {
		t.Fatalf("models show: exit %d: %s", code, out)
	}
	if code, out := n.cli("models", "rm", "my-model", "--files"); code != 0 {
		t.Fatalf("models rm --files: exit %d: %s", code, out)
	}
	if code, out := n.cli("models", "import", "/etc/shadow"); code != 1 || !strings.Contains(out, "outside the node's import directories") || !strings.Contains(out, "--import-dir") {
		t.Fatalf("models import /etc/shadow: exit %d: %s", code, out)
	}
}
