package model

import (
	"bytes"
	"fmt"
)

// CopyPrefix makes c hold the first n positions of src, which must have
// been made by the same shard: the keys and values of a token depend only
// on the tokens up to it, so a sequence that starts with the tokens src
// holds can take their cache instead of computing it again (a prefix
// cache). c's own positions are dropped first.
func (c *Cache) CopyPrefix(src *Cache, n int) error {
	switch {
	case len(c.k) != len(src.k) || c.kvDim != src.kvDim || c.hd != src.hd || c.typ != src.typ:
		return fmt.Errorf("model: copy a prefix between caches of different shapes")
	case n < 0 || n > src.len:
		return fmt.Errorf("model: copy %d positions of a %d-position cache", n, src.len)
	}
	c.len = 0
	if err := c.fit(n); err != nil {
		return err
	}
	// The layout is grow's: per KV head a run of cap key rows, and per
	// value element a run of cap positions.
	es, hd := c.esz, c.hd
	for i := range c.k {
		for g := 0; g < c.kvDim/hd; g++ {
			copy(c.k[i][es*g*c.cap*hd:], src.k[i][es*g*src.cap*hd:es*(g*src.cap+n)*hd])
		}
		for r := 0; r < c.kvDim; r++ {
			copy(c.vt[i][es*r*c.cap:], src.vt[i][es*r*src.cap:es*(r*src.cap+n)])
		}
	}
	c.len = n
	return nil
}

// Bytes is the memory the cache holds for keys and values.
func (c *Cache) Bytes() int64 {
	var n int64
	for i := range c.k {
		n += int64(len(c.k[i]) + len(c.vt[i]))
	}
	return n
}

// SamePrefix reports whether a and b hold the same bytes for their first n
// positions (tests of prefix sharing check with it that what was served is
// what a fresh computation gives).
func SamePrefix(a, b *Cache, n int) bool {
	if n > a.len || n > b.len || len(a.k) != len(b.k) || a.kvDim != b.kvDim || a.esz != b.esz {
		return false
	}
	es, hd := a.esz, a.hd
	for i := range a.k {
		for g := 0; g < a.kvDim/hd; g++ {
			if !bytes.Equal(a.k[i][es*g*a.cap*hd:es*(g*a.cap+n)*hd], b.k[i][es*g*b.cap*hd:es*(g*b.cap+n)*hd]) {
				return false
			}
		}
		for r := 0; r < a.kvDim; r++ {
			if !bytes.Equal(a.vt[i][es*r*a.cap:es*(r*a.cap+n)], b.vt[i][es*r*b.cap:es*(r*b.cap+n)]) {
				return false
			}
		}
	}
	return true
}
