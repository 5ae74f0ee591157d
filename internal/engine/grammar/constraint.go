package grammar

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Prefix reports whether text can begin a matching document (ok) and
// whether it already is one (complete).
func (m *Matcher) Prefix(text []byte) (ok, complete bool) {
	st := m.start()
	var a *arena
	for _, b := range text {
		st = a.stepSet(st, b, nil)
		if len(st) == 0 {
			return false, false
		}
	}
	return true, anyComplete(st)
}

func (m *Matcher) start() []*stack {
	return []*stack{{f: frame{n: m.root, phase: rootStart}}}
}

func anyComplete(st []*stack) bool {
	for _, s := range st {
		if complete(s) {
			return true
		}
	}
	return false
}

// Constraint drives one generation through a Matcher: Mask forbids the
// tokens that would leave the grammar, Accept advances by the token
// sampled. It implements sample.Constraint. A Constraint is not safe for
// concurrent use.
type Constraint struct {
	m     *Matcher
	v     *Vocab
	state []*stack
	done  bool // an end-of-generation token was accepted

	// mask scratch, reused across calls
	ar      arena
	allowed []uint64
	levels  [][]*stack // per trie depth
	key     []byte
	cache   map[string][]uint64
}

// maxCached bounds the per-state mask cache of one Constraint.
const maxCached = 256

// NewConstraint prepares a constraint over the vocabulary given as pieces
// (see Vocab for their exact meaning). Building the Vocab dominates the
// cost; a server should build it once with NewVocab and call
// NewConstraintVocab per request.
func NewConstraint(m *Matcher, pieces []string, eog []int32) (*Constraint, error) {
	v, err := NewVocab(pieces, eog)
	if err != nil {
		return nil, err
	}
	return NewConstraintVocab(m, v), nil
}

// NewConstraintVocab starts a constraint at the beginning of the document.
func NewConstraintVocab(m *Matcher, v *Vocab) *Constraint {
	return &Constraint{m: m, v: v, state: m.start(), allowed: make([]uint64, (v.size+63)/64), cache: map[string][]uint64{}}
}

// Done reports whether the text accepted so far is a complete value (so
// an end-of-generation token is allowed), or generation has ended.
func (c *Constraint) Done() bool { return c.done || anyComplete(c.state) }

// Accept advances by token id. A token the grammar does not allow returns
// a *RejectError and leaves the state unchanged; after an accepted
// end-of-generation token every call returns ErrFinished.
func (c *Constraint) Accept(id int32) error {
	if c.done {
		return ErrFinished
	}
	if id < 0 || int(id) >= c.v.size {
		return &RejectError{ID: id, Offset: -1}
	}
	if c.v.isEOG(id) {
		if !anyComplete(c.state) {
			return &RejectError{ID: id, Offset: -1}
		}
		c.done = true
		return nil
	}
	piece := c.v.piece(id)
	if piece == "" {
		return &RejectError{ID: id, Offset: -1}
	}
	st := c.state
	var heap *arena
	for i := 0; i < len(piece); i++ {
		st = heap.stepSet(st, piece[i], nil)
		if len(st) == 0 {
			return &RejectError{ID: id, Piece: piece, Offset: i}
		}
	}
	c.state = st
	return nil
}

// Mask sets the logit of every token not allowed next to -Inf. Logits past
// the vocabulary (padded output heads) are always masked.
func (c *Constraint) Mask(logits []float32) {
	allowed := c.allowedSet()
	inf := float32(math.Inf(-1))
	n := min(len(logits), c.v.size)
	for w := 0; w*64 < n; w++ {
		word := allowed[w]
		if word == math.MaxUint64 {
			continue
		}
		end := min(w*64+64, n)
		for i := w * 64; i < end; i++ {
			if word&(1<<(uint(i)&63)) == 0 {
				logits[i] = inf
			}
		}
	}
	for i := n; i < len(logits); i++ {
		logits[i] = inf
	}
}

// Allowed appends the ids of the tokens allowed next to dst.
func (c *Constraint) Allowed(dst []int32) []int32 {
	allowed := c.allowedSet()
	for w, word := range allowed {
		for word != 0 {
			i := int32(w*64) + int32(bits.TrailingZeros64(word))
			dst = append(dst, i)
			word &= word - 1
		}
	}
	return dst
}

// allowedSet returns the allowed tokens as a bitset owned by c (valid
// until the next call).
func (c *Constraint) allowedSet() []uint64 {
	clear(c.allowed)
	if c.done {
		return c.allowed
	}
	key := c.stateKey()
	if m, ok := c.cache[string(key)]; ok {
		copy(c.allowed, m)
		return c.allowed
	}
	c.ar.reset()
	if absorbsPlain(c.state) {
		copy(c.allowed, c.v.plain)
		c.walk(&c.v.special, 0, c.state, 0)
	} else {
		c.walk(&c.v.all, 0, c.state, 0)
	}
	if anyComplete(c.state) {
		for _, id := range c.v.eog {
			c.allowed[id>>6] |= 1 << (uint(id) & 63)
		}
	}
	if len(c.cache) >= maxCached {
		clear(c.cache)
	}
	c.cache[string(key)] = append([]uint64(nil), c.allowed...)
	return c.allowed
}

// walk visits the children of node ni of trie t in state st, marking
// every token whose piece the grammar accepts; a subtree is skipped as soon
// as its prefix is refused.
func (c *Constraint) walk(t *vtrie, ni int32, st []*stack, depth int) {
	for len(c.levels) <= depth+1 {
		c.levels = append(c.levels, nil)
	}
	nodes := t.nodes
	for ch := nodes[ni].child; ch >= 0; ch = nodes[ch].sibling {
		nd := &nodes[ch]
		next := c.ar.stepSet(st, nd.b, c.levels[depth+1][:0])
		c.levels[depth+1] = next
		if len(next) == 0 {
			continue
		}
		for _, id := range t.ids[nd.tok : nd.tok+nd.ntok] {
			c.allowed[id>>6] |= 1 << (uint(id) & 63)
		}
		if nd.child >= 0 {
			c.walk(t, ch, next, depth+1)
		}
	}
}

// absorbsPlain reports whether every stack sits inside a string whose
// length is not tracked (or a free object key), where a plain piece is
// allowed and changes nothing.
func absorbsPlain(st []*stack) bool {
	for _, s := range st {
		f := &s.f
		switch {
		case f.lex != lexNormal:
			return false
		case f.n.kind == kindString && f.n.lenCap == 0:
		case f.n.kind == kindObject && f.phase == objKey && f.sub < 0 && f.n.extra != nil:
		default:
			return false
		}
	}
	return true
}

// stateKey serialises the current state for the mask cache.
func (c *Constraint) stateKey() []byte {
	k := c.key[:0]
	for _, s := range c.state {
		for ; s != nil; s = s.next {
			f := &s.f
			k = binary.LittleEndian.AppendUint32(k, uint32(f.n.id))
			k = append(k, f.phase, f.lex)
			k = binary.LittleEndian.AppendUint32(k, uint32(f.sub))
			k = binary.LittleEndian.AppendUint32(k, uint32(f.count))
			k = binary.LittleEndian.AppendUint32(k, uint32(len(f.seen)))
			for _, w := range f.seen {
				k = binary.LittleEndian.AppendUint64(k, w)
			}
		}
		k = append(k, 0xff)
	}
	c.key = k
	return k
}
