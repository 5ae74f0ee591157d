package runner

import (
	"slices"

	"github.com/skulk/skulk/internal/engine/model"
)

// prefixStore keeps the caches of finished sequences with the tokens they
// hold, so that a new sequence whose prompt starts the same way copies
// their keys and values instead of computing them (multi-turn chats,
// shared system prompts, agent loops). It holds at most limit bytes of
// cache and evicts the least recently used first. The batcher's goroutine
// owns it.
type prefixStore struct {
	limit   int64
	size    int64
	tick    uint64
	entries []*prefixEntry
	// evictions counts entries dropped for room (tests).
	evictions int
}

type prefixEntry struct {
	tokens []int32 // the tokens whose keys and values cache holds, in order
	cache  *model.Cache
	bytes  int64
	used   uint64 // the tick of its last use
}

// commonPrefix is how many leading tokens a and b share.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// match returns the entry sharing the longest prefix with tokens and the
// length of that prefix (0 and nil when none shares any), and marks it
// used.
func (p *prefixStore) match(tokens []int32) (*prefixEntry, int) {
	var best *prefixEntry
	n := 0
	for _, e := range p.entries {
		if k := commonPrefix(e.tokens, tokens); k > n {
			best, n = e, k
		}
	}
	if best != nil {
		p.tick++
		best.used = p.tick
	}
	return best, n
}

// add keeps cache, which holds the keys and values of tokens, taking
// ownership of both. Entries whose tokens start the new ones are dropped
// (the new one serves every prefix they could); then the least recently
// used go until it fits. A cache larger than the whole limit is not kept.
func (p *prefixStore) add(tokens []int32, cache *model.Cache) {
	if len(tokens) == 0 {
		return
	}
	p.entries = slices.DeleteFunc(p.entries, func(e *prefixEntry) bool {
		if commonPrefix(e.tokens, tokens) == len(e.tokens) {
			p.size -= e.bytes
			return true
		}
		return false
	})
	b := cache.Bytes()
	if b > p.limit {
		return
	}
	for p.size+b > p.limit {
		p.evict()
	}
	p.tick++
	p.entries = append(p.entries, &prefixEntry{tokens: tokens, cache: cache, bytes: b, used: p.tick})
	p.size += b
}

// evict drops the least recently used entry.
func (p *prefixStore) evict() {
	i := 0
	for j, e := range p.entries {
		if e.used < p.entries[i].used {
			i = j
		}
	}
	p.size -= p.entries[i].bytes
	p.entries = slices.Delete(p.entries, i, i+1)
	p.evictions++
}
