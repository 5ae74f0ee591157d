package model

import "fmt"

// Cache is the key/value cache of one sequence for one shard's blocks.
// It is not safe for concurrent use.
type Cache struct {
	k, v  [][]float32 // per local block: [capacity × KVDim]
	len   int
	cap   int
	kvDim int
}

// NewCache returns an empty cache for up to capacity positions.
func (s *Shard) NewCache(capacity int) *Cache {
	c := &Cache{cap: capacity, kvDim: s.Config.KVDim()}
	for range s.layers {
		c.k = append(c.k, make([]float32, capacity*c.kvDim))
		c.v = append(c.v, make([]float32, capacity*c.kvDim))
	}
	return c
}

// Len is the number of positions held.
func (c *Cache) Len() int { return c.len }

// Cap is the most positions the cache can hold.
func (c *Cache) Cap() int { return c.cap }

// Truncate drops every position from n on, so a sequence can be rewound.
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.len {
		return fmt.Errorf("model: truncate to %d of a %d-position cache", n, c.len)
	}
	c.len = n
	return nil
}

// ErrCacheFull is returned when a batch would exceed the cache capacity.
type ErrCacheFull struct{ Have, Add, Cap int }

func (e *ErrCacheFull) Error() string {
	return fmt.Sprintf("model: context full: %d positions held + %d new > capacity %d", e.Have, e.Add, e.Cap)
}
