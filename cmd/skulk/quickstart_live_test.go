package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/skulk/skulk/internal/models/shortname"
	"github.com/skulk/skulk/internal/testkit/hubstandin"
)

// ptyRun runs `skulk args...` on a pseudo-terminal, as a user types it, and
// returns its exit status and everything it printed.
func ptyRun(t *testing.T, n *liveNode, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(skulkBinary(t), args...)
	cmd.Env = append(os.Environ(), "SKULK_HOST="+n.host, "SKULK_API_KEY=")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	read := make(chan string, 1)
	go func() {
		var out strings.Builder
		buf := make([]byte, 4096)
		for {
			k, err := tty.Read(buf)
			out.Write(buf[:k])
			if err != nil { // EIO once the command exits and closes its end
				read <- out.String()
				return
			}
		}
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("skulk %s did not finish within 2 minutes", strings.Join(args, " "))
	}
	var out string
	select {
	case out = <-read:
	case <-time.After(5 * time.Second):
		tty.Close()
		out = <-read
	}
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](werr); ok {
		code = ee.ExitCode()
	} else if werr != nil {
		t.Fatal(werr)
	}
	return code, out
}

// TestLiveQuickstart follows the README on a terminal, on a fresh home,
// with models by their library name: a stand-in Hub (the one fake: no
// network here) publishes the library's smollm2 repository holding the
// small real stories260K GGUF. skulk pull, run, ps and stop all take the
// name.
func TestLiveQuickstart(t *testing.T) {
	lib, err := shortname.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	def, ok := lib.Lookup("smollm2")
	if !ok {
		t.Fatal("the library has no smollm2")
	}
	hub := hubstandin.New(t)
	hub.AddRepo(def.Repo, "", hubstandin.File{Path: def.File, Local: filepath.Join("..", "..", "testdata", "models", "stories260K.gguf"), LFS: true})
	n := startNode(t, []string{"HF_ENDPOINT=" + hub.URL(), "HF_TOKEN="},
		"--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0", "--quic-addr", "127.0.0.1:0")

	steps := []struct {
		args []string
		want []string
	}{
		{[]string{"list", "--library"}, []string{"smollm2", "qwen3:8b"}},
		{[]string{"pull", "smollm2"}, []string{def.Name + " is installed"}},
		{[]string{"run", "smollm2", "Once upon a time", "--max-tokens", "8", "--temperature", "0"}, []string{"ready in"}},
		{[]string{"ps"}, []string{def.Name, "ready"}},
		{[]string{"stop", "smollm2"}, []string{"stopped"}},
	}
	for _, s := range steps {
		code, out := ptyRun(t, n, s.args...)
		t.Logf("$ skulk %s\n%s", strings.Join(s.args, " "), out)
		if code != 0 {
			t.Fatalf("skulk %s: exit %d", strings.Join(s.args, " "), code)
		}
		for _, w := range s.want {
			if !strings.Contains(out, w) {
				t.Fatalf("skulk %s printed no %q", strings.Join(s.args, " "), w)
			}
		}
		if s.args[0] == "run" {
			_, answer, _ := strings.Cut(out, "ready in")
			if _, answer, _ = strings.Cut(answer, "\n"); strings.TrimSpace(answer) == "" {
				t.Fatal("skulk run printed no answer")
			}
		}
	}
	if code, out := ptyRun(t, n, "ps"); code != 0 || strings.Contains(out, def.Name) {
		t.Fatalf("after skulk stop smollm2, ps: exit %d\n%s", code, out)
	}
}
