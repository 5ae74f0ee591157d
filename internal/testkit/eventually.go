package testkit

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds, and fails the test with "timed out
// after <timeout> waiting for <what>" when it still does not after timeout.
// It checks at once, then backs off from 1 ms to 50 ms between checks, so a
// condition that holds soon costs little and one that takes long does not
// spin. Call it from the test's goroutine (it may call t.Fatalf).
//
// Eventually only waits for something to happen; it is no way to show that
// something does not happen.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for checks := 1; ; checks++ {
		if cond() {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("timed out after %v waiting for %s (checked %d times)", timeout, what, checks)
			return // a fake testing.TB's Fatalf may return
		}
		time.Sleep(min(wait, left))
		wait = min(2*wait, 50*time.Millisecond)
	}
}
