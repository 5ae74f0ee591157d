package testkit

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTB records what a helper reports instead of failing the test, and
// holds its cleanups until run is called.
type fakeTB struct {
	testing.TB // the real test, for whatever is not overridden
	mu         sync.Mutex
	fatals     []string
	errors     []string
	cleanups   []func()
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.fatals)+len(f.errors) > 0
}

func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

func (f *fakeTB) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestEventually(t *testing.T) {
	tests := []struct {
		name      string
		holdsFrom int // the check that first holds; 0: never
		timeout   time.Duration
		wantFatal string
	}{
		{"holds_at_once", 1, time.Second, ""},
		{"holds_after_a_few_checks", 4, 5 * time.Second, ""},
		{"never_holds", 0, 30 * time.Millisecond, "timed out after 30ms waiting for the answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTB{TB: t}
			checks := 0
			Eventually(f, tt.timeout, "the answer", func() bool {
				checks++
				return tt.holdsFrom > 0 && checks >= tt.holdsFrom
			})
			switch {
			case tt.wantFatal == "" && len(f.fatals) > 0:
				t.Fatalf("failed: %q", f.fatals)
			case tt.wantFatal == "" && checks != tt.holdsFrom:
				t.Fatalf("returned after %d checks, want %d", checks, tt.holdsFrom)
			case tt.wantFatal != "" && (len(f.fatals) != 1 || !strings.Contains(f.fatals[0], tt.wantFatal)):
				t.Fatalf("fatals %q, want one containing %q", f.fatals, tt.wantFatal)
			case tt.wantFatal != "" && checks < 2:
				t.Fatalf("gave up after %d checks", checks)
			}
		})
	}
}

func TestClockTimers(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := NewClock(start)
	late := c.NewTimer(3 * time.Second)
	early := c.After(time.Second)
	stopped := c.NewTimer(2 * time.Second)
	now := c.After(0)
	if got := <-now; !got.Equal(start) {
		t.Fatalf("a zero timer fired with %v, want %v", got, start)
	}
	if c.Waiters() != 3 {
		t.Fatalf("%d waiters, want 3", c.Waiters())
	}
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop must report true once, for the pending timer")
	}

	c.Advance(1500 * time.Millisecond)
	if got := c.Now(); !got.Equal(start.Add(1500 * time.Millisecond)) {
		t.Fatalf("Now %v after advancing 1.5 s", got)
	}
	select {
	case got := <-early:
		if !got.Equal(start.Add(time.Second)) {
			t.Fatalf("fired with %v, want its deadline", got)
		}
	default:
		t.Fatal("the 1 s timer did not fire at 1.5 s")
	}
	select {
	case <-late.C:
		t.Fatal("the 3 s timer fired at 1.5 s")
	case <-stopped.C:
		t.Fatal("a stopped timer fired")
	default:
	}

	// Reset re-arms from the clock's present.
	if !late.Reset(time.Second) {
		t.Fatal("Reset of a pending timer reported it was not pending")
	}
	c.Advance(time.Second)
	if got := <-late.C; !got.Equal(start.Add(2500 * time.Millisecond)) {
		t.Fatalf("reset timer fired with %v", got)
	}
	if c.Waiters() != 0 {
		t.Fatalf("%d waiters left", c.Waiters())
	}

	// A fire not yet received is drained by Stop: no stale time follows.
	stale := c.NewTimer(time.Second)
	c.Advance(time.Second)
	if !stale.Stop() {
		t.Fatal("Stop of a fired, unreceived timer must report true")
	}
	select {
	case <-stale.C:
		t.Fatal("a stale time followed Stop")
	default:
	}
}

// TestClockConcurrent: readers and timers on other goroutines while the
// test advances; run with -race.
func TestClockConcurrent(t *testing.T) {
	c := NewClock(time.Unix(0, 0))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_ = c.Now()
				tm := c.NewTimer(time.Millisecond)
				tm.Reset(2 * time.Millisecond)
				tm.Stop()
			}
		})
	}
	armed := c.After(time.Hour)
	for range 100 {
		c.Advance(time.Millisecond)
	}
	wg.Wait()
	c.Advance(time.Hour)
	<-armed
}

func TestNoLeaks(t *testing.T) {
	old := leakWait
	leakWait = 200 * time.Millisecond
	t.Cleanup(func() { leakWait = old })

	tests := []struct {
		name  string
		start func(stop <-chan struct{}) // starts the goroutines of the "test"
		// release: close stop before the check (a straggler that ends
		// while NoLeaks waits) or only after it (a leak).
		releaseBefore bool
		ignore        []string
		wantLeak      bool
	}{
		{"none", func(<-chan struct{}) {}, false, nil, false},
		{"leak", func(stop <-chan struct{}) { go parkedUntil(stop) }, false, nil, true},
		{"straggler_that_ends", func(stop <-chan struct{}) {
			go func() { <-stop; time.Sleep(20 * time.Millisecond) }()
		}, true, nil, false},
		{"ignored", func(stop <-chan struct{}) { go parkedUntil(stop) }, false, []string{"testkit.parkedUntil"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTB{TB: t}
			NoLeaks(f, tt.ignore...)
			stop := make(chan struct{})
			tt.start(stop)
			if tt.releaseBefore {
				close(stop)
			}
			f.runCleanups()
			if !tt.releaseBefore {
				close(stop)
			}
			switch {
			case tt.wantLeak && (len(f.errors) != 1 || !strings.Contains(f.errors[0], "testkit.parkedUntil")):
				t.Fatalf("errors %q, want one naming the leaked goroutine", f.errors)
			case !tt.wantLeak && len(f.errors) > 0:
				t.Fatalf("reported %q", f.errors)
			}
		})
	}
}

func parkedUntil(stop <-chan struct{}) { <-stop }
