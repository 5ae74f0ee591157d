package supervise

import "time"

// Breaker is a crash circuit breaker: Max failures within Window trip it, so
// a supervisor gives up on a child that keeps failing instead of relaunching
// it forever. It is pure: the time of each failure is an input. The zero
// Window counts every failure ever recorded; a Max below 1 trips on the first
// failure. A Breaker is not safe for concurrent use.
type Breaker struct {
	Max    int
	Window time.Duration

	failures []time.Time // oldest first, at most Max entries, within Window of the newest
}

// Record notes a failure at now and reports whether the breaker has tripped:
// whether Max failures, this one included, fall within Window ending at the
// latest failure recorded. Failures recorded out of order are placed by their
// time, so a stale report cannot trip the breaker on its own.
func (b *Breaker) Record(now time.Time) (tripped bool) {
	max := b.Max
	if max < 1 {
		max = 1
	}
	i := len(b.failures)
	for i > 0 && b.failures[i-1].After(now) {
		i--
	}
	b.failures = append(b.failures, time.Time{})
	copy(b.failures[i+1:], b.failures[i:])
	b.failures[i] = now
	b.trim(b.failures[len(b.failures)-1])
	if len(b.failures) > max {
		b.failures = append(b.failures[:0], b.failures[len(b.failures)-max:]...)
	}
	return len(b.failures) >= max
}

// Failures reports how many recorded failures lie within Window ending at now.
func (b *Breaker) Failures(now time.Time) int {
	n := 0
	for _, f := range b.failures {
		if b.Window <= 0 || (now.Sub(f) < b.Window && !f.After(now)) {
			n++
		}
	}
	return n
}

// Reset forgets every failure (after an operator restarts the child by hand,
// or after it has run cleanly long enough).
func (b *Breaker) Reset() { b.failures = b.failures[:0] }

// trim drops failures that fell out of the window ending at end.
func (b *Breaker) trim(end time.Time) {
	if b.Window <= 0 {
		return
	}
	k := 0
	for _, f := range b.failures {
		if end.Sub(f) < b.Window {
			b.failures[k] = f
			k++
		}
	}
	b.failures = b.failures[:k]
}
