//go:build linux

package netns

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestStaleNames(t *testing.T) {
	list := []byte("skt-100-1-h1 (id: 4)\n" +
		"skt-100-1-sw\n" +
		"skt-200-3-h2 (id: 7)\n" +
		"sktx-100-1-h1\n" + // another prefix that starts with ours
		"skt-abc-1-h1\n" + // no pid
		"skt-100\n" + // no sequence
		"other\n\n")
	running := func(pid int) bool { return pid == 200 }
	got := staleNames(list, "skt", running)
	want := []string{"skt-100-1-h1", "skt-100-1-sw"}
	if !slices.Equal(got, want) {
		t.Errorf("staleNames = %q, want %q", got, want)
	}
}

func TestLineLog(t *testing.T) {
	l := newLineLog()
	l.Write([]byte("one\r\ntw"))
	l.Write([]byte("o\nthr"))
	if got := l.lines(0); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("lines = %q", got)
	}
	if got := l.lines(1); !slices.Equal(got, []string{"two"}) {
		t.Fatalf("lines(1) = %q", got)
	}
	if got := l.tail(1); got != "two\nthr" {
		t.Fatalf("tail = %q", got)
	}
	_, changed, closed := l.snapshot(0)
	if closed {
		t.Fatal("closed before close")
	}
	l.close()
	select {
	case <-changed:
	default:
		t.Fatal("close did not wake waiters")
	}
	if got := l.lines(2); !slices.Equal(got, []string{"thr"}) {
		t.Fatalf("close did not flush the unterminated line: %q", got)
	}
}

func TestWaitLogWithoutNamespaces(t *testing.T) {
	// A Proc whose output is written by the test: WaitLogFrom finds a
	// line written while it waits, skips lines before from, and gives a
	// typed error on timeout.
	c := &Cluster{opt: Options{StopGrace: time.Second}}
	p := &Proc{host: &Host{c: c, name: "h1"}, name: "written-by-test", log: newLineLog(), done: make(chan struct{})}
	p.log.Write([]byte("ready 1\n"))
	go func() {
		time.Sleep(50 * time.Millisecond)
		p.log.Write([]byte("ready 2\n"))
	}()
	m, err := p.WaitLogFrom(1, `^ready (\d)$`, 5*time.Second)
	if err != nil || m[1] != "2" {
		t.Fatalf("WaitLogFrom(1) = %q, %v; want the line written later", m, err)
	}
	_, err = p.WaitLog(`^never`, 20*time.Millisecond)
	var lt *LogTimeoutError
	if !errors.As(err, &lt) || lt.Exited || lt.Tail != "ready 1\nready 2" {
		t.Fatalf("WaitLog timeout = %#v", err)
	}
	if _, err := p.WaitLog(`(`, time.Second); err == nil {
		t.Fatal("a bad pattern was accepted")
	}
}
