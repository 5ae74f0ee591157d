package telemetry

import (
	"sync"
	"time"
)

// PartialAfter is how many publication intervals may pass without a new
// version of a reading before the reading is marked partial.
const PartialAfter = 2

// Freshness tracks when each (node, key) reading last changed version, as
// received here, so a reading that stopped updating is shown as partial
// rather than trusted forever. It is safe for concurrent use.
type Freshness struct {
	interval time.Duration

	mu   sync.Mutex
	seen map[readingKey]seenAt
}

type readingKey struct{ node, key string }

type seenAt struct {
	version uint64
	at      time.Time
}

// NewFreshness tracks readings published every interval.
func NewFreshness(interval time.Duration) *Freshness {
	return &Freshness{interval: interval, seen: map[readingKey]seenAt{}}
}

// Observe records that (node, key) holds version at now and reports whether
// the reading is fresh: its version changed within PartialAfter intervals.
func (f *Freshness) Observe(node, key string, version uint64, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := readingKey{node, key}
	s, ok := f.seen[k]
	if !ok || s.version != version {
		s = seenAt{version: version, at: now}
		f.seen[k] = s
	}
	return now.Sub(s.at) <= PartialAfter*f.interval
}

// Prune forgets readings of nodes that are no longer members.
func (f *Freshness) Prune(live func(node string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.seen {
		if !live(k.node) {
			delete(f.seen, k)
		}
	}
}
