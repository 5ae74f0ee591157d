package main

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/homedir"
	"github.com/skulk/skulk/internal/platform/transport/clusterkey"
)

// TestFirstStartKeepsKeyOutOfOutput starts the real binary on a fresh home
// with stdout and stderr going to files (as under a service manager): the
// node creates a cluster, and no part of its key (no 12-byte window of the
// secret, nor the invite line) reaches either stream; the invite is in a
// 0600 file in the home, whose path the log names.
func TestFirstStartKeepsKeyOutOfOutput(t *testing.T) {
	bin := skulkBinary(t)
	home, logs := t.TempDir(), t.TempDir()
	stdout, err := os.Create(filepath.Join(logs, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(logs, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--home", home, "--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0",
		"--quic-addr", "127.0.0.1:0", "--no-mdns", "--threads", "1")
	cmd.Env = append(os.Environ(), "SKULK_HOST=", "SKULK_API_KEY=", "SKULK_CLUSTER_KEY=")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(logs, name))
		return string(b)
	}
	deadline := time.After(60 * time.Second)
	for !servingRE.MatchString(read("stderr")) {
		select {
		case <-done:
			t.Fatalf("skulk serve exited:\n%s", read("stderr"))
		case <-deadline:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("skulk serve did not serve within 60 s:\n%s", read("stderr"))
		case <-time.After(50 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}

	key, err := os.ReadFile(filepath.Join(home, homedir.ClusterKeyFile))
	if err != nil {
		t.Fatalf("the node made no cluster key: %v", err)
	}
	secret := strings.TrimSpace(string(key))
	if len(secret) < 16 {
		t.Fatalf("a %d-byte key", len(secret))
	}
	line := clusterkey.Invite{Secret: secret}.String()
	for _, name := range []string{"stdout", "stderr"} {
		out := read(name)
		for i := 0; i+12 <= len(secret); i++ {
			if strings.Contains(out, secret[i:i+12]) {
				t.Fatalf("%s holds bytes %d..%d of the key", name, i, i+12)
			}
		}
		// The invite's base64 of the payload's start encodes the key.
		if strings.Contains(out, line[:len(clusterkey.InvitePrefix)+24]) {
			t.Fatalf("%s holds the invite line", name)
		}
	}
	invite, err := os.ReadFile(filepath.Join(home, inviteFileName))
	if err != nil {
		t.Fatalf("no invite file: %v", err)
	}
	if st, err := os.Stat(filepath.Join(home, inviteFileName)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("invite file mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	if !strings.Contains(string(invite), clusterkey.InvitePrefix) {
		t.Fatalf("the invite file holds no invite:\n%s", invite)
	}
	if !strings.Contains(read("stderr"), filepath.Join(home, inviteFileName)) {
		t.Errorf("the log does not name the invite file:\n%s", read("stderr"))
	}
}

// TestNodeConsole: only a terminal gets the invite; a buffer, a file and
// /dev/null (a character device, no terminal) get the private file.
func TestNodeConsole(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	home := t.TempDir()
	for _, c := range []struct {
		name string
		out  io.Writer
	}{{"buffer", &strings.Builder{}}, {"file", file}, {"/dev/null", devNull}} {
		t.Run(c.name, func(t *testing.T) {
			w := nodeConsole(c.out, home, slog.New(slog.DiscardHandler))
			if _, ok := w.(*inviteFile); !ok {
				t.Fatalf("%T, want the invite file", w)
			}
			if _, err := io.WriteString(w, "skulk1:secret\n"); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(filepath.Join(home, inviteFileName))
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("invite file: %v %v", st, err)
			}
		})
	}
}
