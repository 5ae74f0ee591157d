package model

import "fmt"

// Cache is the key/value cache of one sequence for one shard's blocks, plus
// the scratch memory the shard's forward passes over it use. It is not safe
// for concurrent use.
type Cache struct {
	// Per local block, per KV head: keys as [capacity × HeadDim] and values
	// transposed as [HeadDim × capacity], so that the attention of one head
	// reads both as contiguous rows.
	k, vt [][]float32
	len   int
	cap   int
	kvDim int
	ar    arena
}

// NewCache returns an empty cache for up to capacity positions.
func (s *Shard) NewCache(capacity int) *Cache {
	c := &Cache{cap: capacity, kvDim: s.Config.KVDim()}
	for range s.layers {
		c.k = append(c.k, make([]float32, capacity*c.kvDim))
		c.vt = append(c.vt, make([]float32, capacity*c.kvDim))
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

// store writes the keys and values of n new positions (rows of KVDim) of
// local block i at positions pos0...
func (c *Cache) store(i, pos0, n, headDim int, k, v []float32) {
	kc, vt := c.k[i], c.vt[i]
	for t := 0; t < n; t++ {
		pos := pos0 + t
		for g := 0; g < c.kvDim/headDim; g++ {
			src := k[t*c.kvDim+g*headDim : t*c.kvDim+(g+1)*headDim]
			copy(kc[(g*c.cap+pos)*headDim:], src)
			vs := v[t*c.kvDim+g*headDim : t*c.kvDim+(g+1)*headDim]
			base := g * headDim * c.cap
			for e, x := range vs {
				vt[base+e*c.cap+pos] = x
			}
		}
	}
}

// ErrCacheFull is returned when a batch would exceed the cache capacity.
type ErrCacheFull struct{ Have, Add, Cap int }

func (e *ErrCacheFull) Error() string {
	return fmt.Sprintf("model: context full: %d positions held + %d new > capacity %d", e.Have, e.Add, e.Cap)
}
