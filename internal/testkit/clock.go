package testkit

import (
	"slices"
	"sync"
	"time"
)

// Clock is a fake clock for code that takes its time as an input (a Now
// func, a timer constructor): it stands still until the test moves it with
// Advance. It is safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time // guarded by mu
	timers []*Timer  // guarded by mu: pending timers, unordered
}

// NewClock returns a clock that reads start until advanced.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the clock's time once it has been
// advanced by d.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C }

// NewTimer returns a timer that fires once the clock has been advanced by d
// (at once when d <= 0). Like a time.Timer's, its channel holds one value
// and a fire never blocks the clock.
func (c *Clock) NewTimer(d time.Duration) *Timer {
	ch := make(chan time.Time, 1)
	t := &Timer{C: ch, ch: ch, c: c}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.when = c.now.Add(d)
	c.scheduleLocked(t)
	return t
}

// Advance moves the clock by d and fires, in deadline order, the timers due
// by then; each fires with its own deadline as the time. A negative d sets
// the clock back, as a wall-clock step does, and fires nothing.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	slices.SortStableFunc(c.timers, func(a, b *Timer) int { return a.when.Compare(b.when) })
	n := 0
	for n < len(c.timers) && !c.timers[n].when.After(c.now) {
		c.timers[n].fireLocked()
		n++
	}
	c.timers = slices.Delete(c.timers, 0, n)
}

// Waiters reports how many timers are pending: a test waits for the code
// under test to arm its timer before it advances past the deadline.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

func (c *Clock) scheduleLocked(t *Timer) {
	if !t.when.After(c.now) {
		t.fireLocked()
		return
	}
	t.pending = true
	c.timers = append(c.timers, t)
}

// removeLocked disarms t and drains a fire not yet received, so no stale
// time follows a Stop or Reset (time.Timer's behaviour since Go 1.23).
func (c *Clock) removeLocked(t *Timer) bool {
	was := t.pending
	if was {
		t.pending = false
		c.timers = slices.DeleteFunc(c.timers, func(x *Timer) bool { return x == t })
	}
	select {
	case <-t.ch:
		was = true
	default:
	}
	return was
}

// Timer is a Clock's timer.
type Timer struct {
	C <-chan time.Time

	ch      chan time.Time
	c       *Clock
	when    time.Time // guarded by c.mu
	pending bool      // guarded by c.mu
}

func (t *Timer) fireLocked() {
	t.pending = false
	select {
	case t.ch <- t.when:
	default: // the previous value was not received; as time.Timer, drop this one
	}
}

// Stop prevents the timer from firing; it reports whether it was pending
// (a fire not yet received counts as pending).
func (t *Timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.removeLocked(t)
}

// Reset makes the timer fire once the clock has been advanced by d from now;
// it reports whether it was pending.
func (t *Timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.c.removeLocked(t)
	t.when = t.c.now.Add(d)
	t.c.scheduleLocked(t)
	return was
}
