package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHomeLock: a second `skulk run` on a home a running node holds exits
// at once, naming the holder's pid; a lock file a dead process left is
// taken over.
func TestHomeLock(t *testing.T) {
	home := t.TempDir()
	first := startNode(t, home)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	begin := time.Now()
	out, err := exec.CommandContext(ctx, skulkBin, "run", "--home", home, "--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0",
		"--quic-addr", "127.0.0.1:0", "--no-mdns").CombinedOutput()
	if err == nil {
		t.Fatalf("a second process on the home started:\n%s", out)
	}
	want := fmt.Sprintf("home %s is in use by skulk (pid %d)", home, first.cmd.Process.Pid)
	if !strings.Contains(string(out), want) || time.Since(begin) > 10*time.Second {
		t.Fatalf("after %v the second process said:\n%s\nwant %q", time.Since(begin), out, want)
	}
	first.stop()

	// A stale lock: the file names a process that is gone and holds no
	// lock.
	stale := t.TempDir()
	if err := os.WriteFile(filepath.Join(stale, "lock"), []byte("999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, stale)
	b, _ := os.ReadFile(filepath.Join(stale, "lock"))
	if strings.TrimSpace(string(b)) != fmt.Sprint(n.cmd.Process.Pid) {
		t.Fatalf("the lock names %q, want the new node's pid %d", b, n.cmd.Process.Pid)
	}
}
