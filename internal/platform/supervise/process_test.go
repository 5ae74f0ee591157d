package supervise

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestEchoAndCleanExit(t *testing.T) {
	p := start(t, "echo", nil)
	br := bufio.NewReader(p.Stdout())
	for i := range 3 {
		want := fmt.Sprintf("line %d", i)
		if _, err := io.WriteString(p.Stdin(), want+"\n"); err != nil {
			t.Fatal(err)
		}
		if got := readLine(t, br); got != want {
			t.Fatalf("echo: got %q, want %q", got, want)
		}
	}
	p.Stdin().Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	exit, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !exit.Success() || exit.Pid != p.Pid() {
		t.Fatalf("exit = %+v, want success of pid %d", exit, p.Pid())
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name   string
		role   string
		kill   bool
		code   int
		signal string
	}{
		{name: "code7", role: "exit7", code: 7},
		{name: "terminated", role: "sleep", kill: true, code: -1, signal: "terminated"},
		{name: "killed_after_grace", role: "stubborn", kill: true, code: -1, signal: "killed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, tt.role, nil)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			var exit Exit
			var err error
			if tt.kill {
				readLine(t, bufio.NewReader(p.Stdout())) // the child is up (and ignores SIGTERM if stubborn)
				exit, err = p.Kill(ctx)
			} else {
				exit, err = p.Wait(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			if exit.Code != tt.code || exit.Signal != tt.signal || exit.Err != nil {
				t.Fatalf("exit = %+v (%s), want code %d signal %q", exit, exit, tt.code, tt.signal)
			}
			if exit.Success() {
				t.Fatal("a failed exit reports success")
			}
		})
	}
}

func TestWaitHonoursContext(t *testing.T) {
	p := start(t, "sleep", nil)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Wait(ctx); !errors.Is(err, ErrNotExited) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a live child = %v, want ErrNotExited and DeadlineExceeded", err)
	}
}

// TestKillReachesGrandchild kills a child that started a child of its own:
// the grandchild must die with it.
func TestKillReachesGrandchild(t *testing.T) {
	p := start(t, "group", nil)
	br := bufio.NewReader(p.Stdout())
	var pids []int
	for len(pids) < 2 {
		line := readLine(t, br)
		if line == "sleeping" {
			continue
		}
		for _, f := range strings.Fields(line) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("pid line %q: %v", line, err)
			}
			pids = append(pids, n)
		}
	}
	if pids[0] != p.Pid() {
		t.Fatalf("child says pid %d, Process says %d", pids[0], p.Pid())
	}
	grandchild := pids[1]
	if !pidAlive(grandchild) {
		t.Fatal("grandchild is not running before the kill")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := p.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	// Our end of stdout is closed by Kill; the grandchild must be dead.
	deadline := time.Now().Add(10 * time.Second)
	for pidAlive(grandchild) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived the group kill", grandchild)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLeaderExitKillsGroup checks that a grandchild cannot outlive a child
// that exits on its own: stdout, which the grandchild shares, reaches EOF.
func TestLeaderExitKillsGroup(t *testing.T) {
	p := start(t, "group", nil)
	br := bufio.NewReader(p.Stdout())
	line := readLine(t, br)
	for line == "sleeping" {
		line = readLine(t, br)
	}
	var leader, grandchild int
	if _, err := fmt.Sscanf(line, "%d %d", &leader, &grandchild); err != nil {
		t.Fatalf("pid line %q: %v", line, err)
	}
	// Kill only the leader, as a crash would.
	if err := killPid(leader); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, br)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stdout: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("stdout never reached EOF: the grandchild outlived its parent")
	}
	if exit := p.Exit(); exit.Signal != "killed" {
		t.Fatalf("exit = %s, want killed", exit)
	}
}

func TestStderrCapture(t *testing.T) {
	rec := newRecorder()
	p := start(t, "stderr", func(s *Spec) {
		s.Logger = slog.New(rec).With("runner", "r1")
		s.MaxLine = 32
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	got := rec.all()
	want := []struct {
		msg       string
		truncated bool
	}{
		{"first line", false},
		{strings.Repeat("x", 32), true},
		{"after long", false},
		{"no newline", false},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.msg != w.msg {
			t.Errorf("record %d: msg %q, want %q", i, g.msg, w.msg)
		}
		if (g.attrs["truncated"] == "true") != w.truncated {
			t.Errorf("record %d: truncated=%q, want %v", i, g.attrs["truncated"], w.truncated)
		}
		if g.attrs["runner"] != "r1" || g.attrs["stream"] != "stderr" || g.attrs["pid"] != strconv.Itoa(p.Pid()) {
			t.Errorf("record %d: attrs %v lack the child's identity", i, g.attrs)
		}
	}
}

// TestStderrRecords: a child's slog JSON records keep their level, message
// and attributes in the parent's log; plain text stays an Info record.
func TestStderrRecords(t *testing.T) {
	rec := newRecorder()
	p := start(t, "slog", func(s *Spec) { s.Logger = slog.New(rec) })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	got := rec.all()
	want := []record{
		{slog.LevelWarn, "weights are slow to read", map[string]string{"file": "m.gguf", "mib_per_s": "12.5", "tries": "3"}},
		{slog.LevelDebug, "detail", map[string]string{"req": "map[id:t1]"}},
		{slog.LevelInfo, "plain text", nil},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.level != w.level || g.msg != w.msg {
			t.Errorf("record %d: %v %q, want %v %q", i, g.level, g.msg, w.level, w.msg)
		}
		if _, ok := g.attrs["time"]; ok {
			t.Errorf("record %d: the child's time was kept: %v", i, g.attrs)
		}
		for k, v := range w.attrs {
			if g.attrs[k] != v {
				t.Errorf("record %d: %s=%q, want %q (attrs %v)", i, k, g.attrs[k], v, g.attrs)
			}
		}
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() context.Context
		spec Spec
	}{
		{name: "missing_program", ctx: context.Background, spec: Spec{Path: "/nonexistent/skulk-child"}},
		{name: "cancelled", ctx: func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, spec: Spec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p, err := Start(tt.ctx(), tt.spec); err == nil {
				p.Kill(context.Background())
				t.Fatal("Start succeeded")
			}
		})
	}
}
