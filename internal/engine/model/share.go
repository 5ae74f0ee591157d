package model

import (
	"bytes"
	"fmt"
)

// CopyPrefix makes c hold the first n positions of src, which must have
// been made by the same shard: the keys and values of a token depend only
// on the tokens up to it, so a sequence that starts with the tokens src
// holds can take their cache instead of computing it again (a prefix
// cache). c's own positions are dropped first. A LongRoPE model's caches
// of different factors (one within the original context, one past it)
// hold different keys for the same tokens and share nothing.
func (c *Cache) CopyPrefix(src *Cache, n int) error {
	switch {
	case len(c.k) != len(src.k) || c.kvDim != src.kvDim || c.hd != src.hd || c.hdv != src.hdv || c.typ != src.typ:
		return fmt.Errorf("model: copy a prefix between caches of different shapes")
	case !sameFactors(c.ropeF, src.ropeF):
		return fmt.Errorf("model: copy a prefix between caches of different rotary factors (LongRoPE's short and long)")
	case n < 0 || n > src.len:
		return fmt.Errorf("model: copy %d positions of a %d-position cache", n, src.len)
	}
	c.len = 0
	if err := c.fit(n); err != nil {
		return err
	}
	ks, vs, sks, svs := c.keySpans(n), c.valueSpans(n), src.keySpans(n), src.valueSpans(n)
	for i := range c.k {
		for j, sp := range ks {
			copy(c.k[i][sp.off:sp.off+sp.n], src.k[i][sks[j].off:sks[j].off+sp.n])
		}
		for j, sp := range vs {
			copy(c.vt[i][sp.off:sp.off+sp.n], src.vt[i][svs[j].off:svs[j].off+sp.n])
		}
	}
	c.len = n
	return nil
}

// sameFactors reports whether a and b are the same factors (a shard's
// slices, compared by identity) or both none.
func sameFactors(a, b []float32) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
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
	if n > a.len || n > b.len || len(a.k) != len(b.k) || a.kvDim != b.kvDim || a.hd != b.hd || a.hdv != b.hdv || a.typ != b.typ {
		return false
	}
	aks, avs, bks, bvs := a.keySpans(n), a.valueSpans(n), b.keySpans(n), b.valueSpans(n)
	for i := range a.k {
		for j, sp := range aks {
			if !bytes.Equal(a.k[i][sp.off:sp.off+sp.n], b.k[i][bks[j].off:bks[j].off+sp.n]) {
				return false
			}
		}
		for j, sp := range avs {
			if !bytes.Equal(a.vt[i][sp.off:sp.off+sp.n], b.vt[i][bvs[j].off:bvs[j].off+sp.n]) {
				return false
			}
		}
	}
	return true
}

// span is a run of bytes in one block's keys or values.
type span struct{ off, n int }

// keySpans are the runs of one block's keys that hold positions [0, n), in
// grow's layout: per KV head, a run of cap rows of rb bytes.
func (c *Cache) keySpans(n int) []span {
	heads := c.kvDim / c.hd
	out := make([]span, heads)
	for g := range out {
		out[g] = span{c.rb * g * c.cap, c.rb * n}
	}
	return out
}

// valueSpans are the same for the values: per KV head a run of cap rows of
// rbv bytes in a quantized cache, else per value element a run of cap
// positions.
func (c *Cache) valueSpans(n int) []span {
	if c.quantized() {
		out := make([]span, c.kvDim/c.hd)
		for g := range out {
			out[g] = span{c.rbv * g * c.cap, c.rbv * n}
		}
		return out
	}
	out := make([]span, c.vDim)
	for r := range out {
		out[r] = span{c.esz * r * c.cap, c.esz * n}
	}
	return out
}
