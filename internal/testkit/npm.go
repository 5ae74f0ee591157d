package testkit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// NodeProject returns a directory where the Node project in dir (a
// package.json, its committed package-lock.json and scripts) runs with its
// locked dependencies: dir itself when `npm ci` was already run there (as
// .ci/run does), else a temporary copy installed with `npm ci`. It skips the
// test, saying why, when node or npm is missing.
func NodeProject(t testing.TB, dir string, files ...string) (project, node string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; skipping the official npm client check")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir, node
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed; skipping the official npm client check")
	}
	tmp := t.TempDir()
	for _, name := range append([]string{"package.json", "package-lock.json"}, files...) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in a copy of %s failed: %v\n%s", dir, err, out)
	}
	return tmp, node
}
