package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestLiveRunOffersANode: `skulk run MODEL PROMPT` on a terminal where no
// node runs offers to start one; yes starts it in the background (its own
// session, its log in the home) and answers; no says how to start one.
// Without a terminal nothing is offered.
func TestLiveRunOffersANode(t *testing.T) {
	port := freePorts(t)
	home := t.TempDir()
	env := append(os.Environ(), "SKULK_HOST=127.0.0.1:"+strconv.Itoa(port), "SKULK_HOME="+home, "SKULK_API_KEY=",
		"SKULK_PORT=", "SKULK_API_ADDR=", "SKULK_CLUSTER_KEY=", "SKULK_BOOTSTRAP_PEERS=")
	run := func(answer string) (int, string) {
		t.Helper()
		cmd := exec.Command(skulkBinary(t), "run", "stories260k", "Once upon a time", "--max-tokens", "8", "--temperature", "0")
		cmd.Env = env
		tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 160})
		if err != nil {
			t.Fatal(err)
		}
		defer tty.Close()
		out := make(chan string, 1)
		go func() {
			var b strings.Builder
			buf := make([]byte, 4096)
			asked := false
			for {
				k, err := tty.Read(buf)
				b.Write(buf[:k])
				if !asked && strings.Contains(b.String(), "[Y/n]") {
					asked = true
					tty.WriteString(answer + "\n")
				}
				if err != nil {
					out <- b.String()
					return
				}
			}
		}()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var werr error
		select {
		case werr = <-done:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			t.Fatal("skulk run did not finish within 2 minutes")
		}
		tty.Close()
		s := <-out
		code := 0
		if ee, ok := werr.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, s
	}

	code, out := run("n")
	if code != 1 || !strings.Contains(out, "No skulk node runs at 127.0.0.1:"+strconv.Itoa(port)) || !strings.Contains(out, "start one with 'skulk serve'") {
		t.Fatalf("answered no: exit %d\n%s", code, out)
	}

	code, out = run("")
	m := regexp.MustCompile(`started a node at \S+ \(pid (\d+); its log is (\S+);`).FindStringSubmatch(out)
	if m != nil {
		pid, _ := strconv.Atoi(m[1])
		t.Cleanup(func() {
			syscall.Kill(pid, syscall.SIGTERM)
			for range 100 {
				if syscall.Kill(pid, 0) != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			syscall.Kill(pid, syscall.SIGKILL)
		})
	}
	t.Logf("%s", out)
	if code != 0 || m == nil || !strings.HasPrefix(m[2], home) {
		t.Fatalf("answered yes: exit %d, want a node started with its log in %s\n%s", code, home, out)
	}
	_, answer, _ := strings.Cut(out, "ready in")
	if _, answer, _ = strings.Cut(answer, "\n"); strings.TrimSpace(answer) == "" {
		t.Fatalf("no answer after the node started:\n%s", out)
	}
	// The node outlives the command that started it.
	if !answers("127.0.0.1:" + strconv.Itoa(port)) {
		t.Fatal("the node stopped with the command that started it")
	}
}
