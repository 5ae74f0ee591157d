package model

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// Cache is the key/value cache of one sequence for one shard's blocks, plus
// the scratch memory the shard's forward passes over it use. It is not safe
// for concurrent use.
type Cache struct {
	// Per local block, per KV head: keys as [capacity × HeadDim] and values
	// transposed as [HeadDim × capacity], so that the attention of one head
	// reads both as contiguous rows. Elements are of type typ: fp16 by
	// default, as llama.cpp's cache (half the memory of float32 per
	// position, and half the bytes a long-context decode step reads), or
	// float32 (Options.F32Cache).
	k, vt [][]byte
	typ   tensor.Type
	esz   int // bytes an element
	len   int
	cap   int
	kvDim int
	ar    arena
}

// NewCache returns an empty cache for up to capacity positions.
func (s *Shard) NewCache(capacity int) *Cache {
	c := &Cache{cap: capacity, kvDim: s.Config.KVDim(), typ: s.kvType, esz: 2}
	if c.typ == tensor.F32 {
		c.esz = 4
	}
	for range s.layers {
		c.k = append(c.k, make([]byte, c.esz*capacity*c.kvDim))
		c.vt = append(c.vt, make([]byte, c.esz*capacity*c.kvDim))
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
// local block i at positions pos0..., in the cache's element type.
func (c *Cache) store(i, pos0, n, headDim int, k, v []float32) {
	kc, vt := c.k[i], c.vt[i]
	for t := 0; t < n; t++ {
		pos := pos0 + t
		for g := 0; g < c.kvDim/headDim; g++ {
			src := k[t*c.kvDim+g*headDim : t*c.kvDim+(g+1)*headDim]
			for e, x := range src {
				c.put(kc, (g*c.cap+pos)*headDim+e, x)
			}
			vs := v[t*c.kvDim+g*headDim : t*c.kvDim+(g+1)*headDim]
			base := g * headDim * c.cap
			for e, x := range vs {
				c.put(vt, base+e*c.cap+pos, x)
			}
		}
	}
}

// put writes x as element i of buf.
func (c *Cache) put(buf []byte, i int, x float32) {
	if c.typ == tensor.F32 {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		return
	}
	binary.LittleEndian.PutUint16(buf[2*i:], tensor.F32ToF16(x))
}

// ErrCacheFull is returned when a batch would exceed the cache capacity.
type ErrCacheFull struct{ Have, Add, Cap int }

func (e *ErrCacheFull) Error() string {
	return fmt.Sprintf("model: context full: %d positions held + %d new > capacity %d", e.Have, e.Add, e.Cap)
}
