package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/skulk/skulk/internal/platform/config"
)

// nodeStartWait bounds the wait for a node started by offerNode to answer.
const nodeStartWait = 60 * time.Second

// errNoNode is the answer "no" to offerNode.
var errNoNode = errors.New("no skulk node runs here: start one with 'skulk serve' (or 'skulk run' with no model) in another terminal, or name another node with --host or SKULK_HOST")

// offerNode is `skulk run MODEL` finding no node where it looks: when that
// is this machine and a user is at the terminal, it offers to start one in
// the background, as a first run would want, and waits until it answers.
// Elsewhere, or without a terminal, it does nothing: the request's own
// error says how to start one.
func offerNode(ctx context.Context, s stdio, c *apiClient) error {
	if !c.onLoopback() || !isTerminal(s.in) {
		return nil
	}
	addr, err := apiAddr(c.base)
	if err != nil || answers(addr) {
		return nil
	}
	fmt.Fprintf(s.err, "No skulk node runs at %s. Start one here, in the background? [Y/n] ", addr)
	switch strings.ToLower(strings.TrimSpace(readLine(s.in))) {
	case "", "y", "yes":
	default:
		return errNoNode
	}
	_, port, _ := net.SplitHostPort(addr)
	home := config.DefaultHome(os.Getenv)
	pid, logPath, err := startBackgroundNode(home, port)
	if err != nil {
		return fmt.Errorf("could not start a node: %w; start one with 'skulk serve'", err)
	}
	deadline := time.Now().Add(nodeStartWait)
	for !answers(addr) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the node started (pid %d) does not answer at %s after %v; its log is %s", pid, addr, nodeStartWait, logPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	fmt.Fprintf(s.err, "started a node at %s (pid %d; its log is %s; stop it with 'kill %d')\n", addr, pid, logPath, pid)
	return nil
}

// apiAddr is the HOST:PORT a client's base URL names.
func apiAddr(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	if u.Port() == "" {
		return "", fmt.Errorf("no port in %s", base)
	}
	return u.Host, nil
}

// answers reports whether something accepts connections at addr.
func answers(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// readLine reads one line from r byte by byte, so that nothing after it is
// taken from the chat that reads r next.
func readLine(r io.Reader) string {
	var b strings.Builder
	var one [1]byte
	for {
		n, err := r.Read(one[:])
		if n == 1 {
			if one[0] == '\n' {
				return b.String()
			}
			b.WriteByte(one[0])
		}
		if err != nil {
			return b.String()
		}
	}
}

// startBackgroundNode starts `skulk serve --port PORT` in its own session, so that it
// outlives this command, with its output appended to HOME/node.log.
func startBackgroundNode(home, port string) (int, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, "", err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return 0, "", err
	}
	logPath := filepath.Join(home, "node.log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	cmd := exec.Command(exe, "serve", "--port", port)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	return pid, logPath, nil
}
