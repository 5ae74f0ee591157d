package model

import (
	"fmt"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// Cache is the key/value cache of one sequence for one shard's blocks, plus
// the scratch memory the shard's forward passes over it use. It is not safe
// for concurrent use.
type Cache struct {
	// Per local block, per KV head: keys as [cap × HeadDim] and values
	// transposed as [HeadDim × cap], so that the attention of one head
	// reads both as contiguous rows. Elements are of type typ: fp16 by
	// default, as llama.cpp's cache (half the memory of float32 per
	// position, and half the bytes a long-context decode step reads), or
	// float32 (Options.F32Cache). A block-quantized cache (Q8_0, Q4_0:
	// Options.CacheType) keeps values as [cap × hdv] rows like the keys,
	// since its blocks run along a head's elements, as llama.cpp's
	// quantized V cache does. Values are hdv wide, keys hd: they differ
	// under latent attention (MLA).
	k, vt [][]byte
	typ   tensor.Type
	esz   int // bytes an element, for F16 and F32
	rb    int // bytes of one head's row of hd key elements
	rbv   int // bytes of one head's row of hdv value elements
	len   int
	cap   int // positions allocated; grows up to limit as the sequence does
	limit int // the most positions the cache may hold
	kvDim int // keys a position: KV heads × hd
	vDim  int // values a position: KV heads × hdv
	hd    int
	hdv   int
	// ropeF are the rotary frequency factors its keys were rotated with
	// (Shard.ropeFactors of its limit): a LongRoPE model's short or long
	// ones, fixed for the cache's life.
	ropeF []float32
	ar    arena
}

// initialPositions is how many positions a new cache allocates at first:
// a cache's memory follows the tokens it holds (doubling, up to its limit),
// not the most it may hold, so four short chats in a long window do not
// each take the whole window.
const initialPositions = 256

// NewCache returns an empty cache for up to capacity positions.
func (s *Shard) NewCache(capacity int) *Cache {
	cfg := s.Config
	c := &Cache{limit: capacity, kvDim: cfg.KVDim(), vDim: cfg.VDim(), hd: cfg.HeadDim, hdv: cfg.vHead(), typ: s.kvType, esz: 2,
		ropeF: s.ropeFactors(capacity)}
	if c.typ == tensor.F32 {
		c.esz = 4
	}
	rb, _ := tensor.RowBytes(c.typ, int64(c.hd)) // checked at load (Shard.kvType)
	rbv, _ := tensor.RowBytes(c.typ, int64(c.hdv))
	c.rb, c.rbv = int(rb), int(rbv)
	c.k, c.vt = make([][]byte, len(s.layers)), make([][]byte, len(s.layers))
	c.grow(min(capacity, initialPositions))
	return c
}

// room reports *ErrCacheFull unless n more positions are within the limit.
func (c *Cache) room(n int) error {
	if c.len+n > c.limit {
		return &ErrCacheFull{Have: c.len, Add: n, Cap: c.limit}
	}
	return nil
}

// fit makes room for n more positions, or reports *ErrCacheFull past the
// limit (leaving the cache as it was).
func (c *Cache) fit(n int) error {
	if err := c.room(n); err != nil {
		return err
	}
	if c.len+n > c.cap {
		c.grow(min(c.limit, max(c.len+n, 2*c.cap)))
	}
	return nil
}

// grow reallocates every block's keys and values for capacity positions,
// keeping the positions held.
func (c *Cache) grow(capacity int) {
	es, hd, rb, rbv, heads := c.esz, c.hd, c.rb, c.rbv, c.kvDim/c.hd
	for i := range c.k {
		k := make([]byte, rb*capacity*heads)
		if c.quantized() {
			v := make([]byte, rbv*capacity*heads)
			for g := 0; g < heads && c.len > 0; g++ {
				copy(k[rb*g*capacity:], c.k[i][rb*g*c.cap:rb*(g*c.cap+c.len)])
				copy(v[rbv*g*capacity:], c.vt[i][rbv*g*c.cap:rbv*(g*c.cap+c.len)])
			}
			c.k[i], c.vt[i] = k, v
			continue
		}
		// DotF32Tile reads the values in whole chunks: the last row's last
		// chunk may reach past the capacity.
		vt := make([]byte, es*(capacity*c.vDim+tensor.DotF32TileChunk))
		if c.len > 0 {
			for g := 0; g < c.kvDim/hd; g++ {
				copy(k[es*g*capacity*hd:], c.k[i][es*g*c.cap*hd:es*(g*c.cap+c.len)*hd])
			}
			for r := 0; r < c.vDim; r++ {
				copy(vt[es*r*capacity:], c.vt[i][es*r*c.cap:es*(r*c.cap+c.len)])
			}
		}
		c.k[i], c.vt[i] = k, vt
	}
	c.cap = capacity
}

// quantized reports a block-quantized cache, whose values are kept as rows.
func (c *Cache) quantized() bool { return c.typ.BlockElems() > 1 }

// Len is the number of positions held.
func (c *Cache) Len() int { return c.len }

// Cap is the most positions the cache can hold.
func (c *Cache) Cap() int { return c.limit }

// Truncate drops every position from n on, so a sequence can be rewound.
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.len {
		return fmt.Errorf("model: truncate to %d of a %d-position cache", n, c.len)
	}
	c.len = n
	return nil
}

// store writes the keys and values of n new positions (rows of KVDim and
// VDim) of local block i at positions pos0..., in the cache's element type,
// using the arena's scratch. A key row is contiguous in the cache and converted in
// one kernel call. Values go into the transposed layout: for a batch, each
// element's column of n positions is gathered and converted in one call
// into its contiguous run; for a few positions, each value row is
// converted and scattered element by element. The conversion is elementwise,
// so both give the same bytes.
func (c *Cache) store(k tensor.Kernels, a *arena, i, pos0, n int, keys, vals []float32) {
	kc, vt := c.k[i], c.vt[i]
	es, headDim, hdv, rb, rbv := c.esz, c.hd, c.hdv, c.rb, c.rbv
	heads := c.kvDim / headDim
	for t := 0; t < n; t++ {
		for g := 0; g < heads; g++ {
			src := keys[t*c.kvDim+g*headDim : t*c.kvDim+(g+1)*headDim]
			off := rb * (g*c.cap + pos0 + t)
			c.convert(k, src, kc[off:off+rb])
			if c.quantized() {
				voff := rbv * (g*c.cap + pos0 + t)
				c.convert(k, vals[t*c.vDim+g*hdv:t*c.vDim+(g+1)*hdv], vt[voff:voff+rbv])
			}
		}
	}
	if c.quantized() {
		return
	}
	if n >= storeColumns {
		col := a.vcol[:n]
		for g := 0; g < heads; g++ {
			for e := 0; e < hdv; e++ {
				for t := range col {
					col[t] = vals[t*c.vDim+g*hdv+e]
				}
				off := es * ((g*hdv+e)*c.cap + pos0)
				c.convert(k, col, vt[off:off+es*n])
			}
		}
		return
	}
	row := a.vrow[:es*hdv]
	for t := 0; t < n; t++ {
		pos := pos0 + t
		for g := 0; g < heads; g++ {
			c.convert(k, vals[t*c.vDim+g*hdv:t*c.vDim+(g+1)*hdv], row)
			base := g * hdv * c.cap
			for e := 0; e < hdv; e++ {
				copy(vt[es*(base+e*c.cap+pos):], row[es*e:es*e+es])
			}
		}
	}
}

// storeColumns is the batch size from which store converts values a
// column at a time.
const storeColumns = 8

// convert writes x into dst in the cache's element type, rounded as
// llama.cpp's CPU backend stores rows into its cache.
func (c *Cache) convert(k tensor.Kernels, x []float32, dst []byte) {
	if c.typ == tensor.F32 {
		copy(dst, tensor.F32Bytes(x))
		return
	}
	if err := k.QuantizeStore(c.typ, x, dst); err != nil {
		panic(err) // sizes are fixed at load time; an error here is a bug
	}
}

// ErrCacheFull is returned when a batch would exceed the cache capacity.
type ErrCacheFull struct{ Have, Add, Cap int }

func (e *ErrCacheFull) Error() string {
	return fmt.Sprintf("model: context full: %d positions held + %d new > capacity %d", e.Have, e.Add, e.Cap)
}
