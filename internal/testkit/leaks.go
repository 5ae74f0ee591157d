package testkit

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// leakWait bounds how long NoLeaks waits for goroutines that are still
// winding down (a closed socket's reader, a cancelled timer's goroutine).
var leakWait = 5 * time.Second

// ignoredStacks mark goroutines that belong to the runtime or the test
// framework, not to the code under test.
var ignoredStacks = []string{
	"testing.(*T).Run(",
	"testing.(*M).",
	"testing.tRunner(",
	"testing.runTests",
	"testing.(*F).",
	"os/signal.signal_recv",
	"os/signal.loop",
	"runtime.ReadTrace",
	"runtime/trace.Start",
}

// NoLeaks fails the test when, after its cleanups, goroutines run that did
// not run when NoLeaks was called. Call it first in a test, so its check
// runs after every other cleanup (they run last-registered first), and not
// in tests that run in parallel with others (their goroutines would count).
// Goroutines that are still winding down get a few seconds; goroutines of
// the runtime and the testing package, and those whose stack contains one
// of ignore, never count. A test that already failed is not checked: its
// goroutines were likely cut off mid-flight.
func NoLeaks(t testing.TB, ignore ...string) {
	t.Helper()
	before := map[int]bool{}
	for _, g := range goroutines() {
		before[g.id] = true
	}
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		var leaked []goroutine
		deadline := time.Now().Add(leakWait)
		for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
			leaked = leaked[:0]
			for _, g := range goroutines() {
				if !before[g.id] && !ignored(g.stack, ignore) {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(wait)
		}
		if len(leaked) > 0 {
			var b strings.Builder
			for _, g := range leaked {
				b.WriteString("\n\n")
				b.WriteString(g.stack)
			}
			t.Errorf("%d goroutine(s) still running %v after the test ended:%s", len(leaked), leakWait, b.String())
		}
	})
}

type goroutine struct {
	id    int
	stack string
}

// goroutines returns every goroutine's id and stack trace.
func goroutines() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for _, block := range bytes.Split(buf, []byte("\n\n")) {
		// "goroutine 18 [chan receive]:"
		rest, ok := bytes.CutPrefix(block, []byte("goroutine "))
		if !ok {
			continue
		}
		idText, _, _ := bytes.Cut(rest, []byte(" "))
		id, err := strconv.Atoi(string(idText))
		if err != nil {
			continue
		}
		out = append(out, goroutine{id: id, stack: string(block)})
	}
	return out
}

func ignored(stack string, extra []string) bool {
	for _, s := range ignoredStacks {
		if strings.Contains(stack, s) {
			return true
		}
	}
	for _, s := range extra {
		if strings.Contains(stack, s) {
			return true
		}
	}
	return false
}
