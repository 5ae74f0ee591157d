package grammar

import (
	"math/bits"
	"slices"
)

// kind is what a node matches.
type kind uint8

const (
	kindRoot    kind = iota + 1 // the document: one value (alts[0]), then nothing
	kindObject                  // {...} with declared keys and optional extra keys
	kindArray                   // [...] with prefix items, then items
	kindString                  // "..." with optional length bounds in code points
	kindNumber                  // any JSON number
	kindInteger                 // -?(0|[1-9][0-9]*)
	kindLiteral                 // one of a fixed set of encoded values (enum, const, true/false/null)
	kindUnion                   // any of alts
)

// node is one compiled schema. Nodes form a graph (the any-value node is
// cyclic); they are immutable once Compile returns.
type node struct {
	kind kind
	id   int32

	// object
	props        []*node  // declared properties, indexed like keys' terminals
	names        []string // their names
	keys         *trie    // encoded names without quotes; terminal = index in props
	avail        bitset   // declared properties that may be written (their schema is satisfiable)
	required     bitset
	extra        *node // schema of undeclared keys; nil forbids them
	restrictKeys bool  // undeclared keys may not use escapes (declared names exist)

	// array
	prefix   []*node
	items    *node // nil: nothing after prefix
	minItems int32
	maxItems int32 // effective bound, -1 unbounded
	countCap int32 // item counts saturate here (no bound needs more)

	// string
	minLen, maxLen int32 // code points; maxLen -1 unbounded
	lenCap         int32 // length counts saturate here; 0 means lengths are not tracked

	// literal
	lit     *trie
	litVals []any // the decoded values (nil for the any-value's true/false/null)

	// union, root
	alts []*node
}

// item returns the schema of the array item at index i, or nil.
func (n *node) item(i int32) *node {
	if int(i) < len(n.prefix) {
		return n.prefix[i]
	}
	return n.items
}

// bitset is an immutable set of small integers; nil is empty.
type bitset []uint64

func (s bitset) has(i int32) bool {
	w := int(i >> 6)
	return w < len(s) && s[w]&(1<<(uint(i)&63)) != 0
}

// with returns a new set holding s and i.
func (s bitset) with(i int32) bitset {
	w := int(i>>6) + 1
	out := make(bitset, max(len(s), w))
	copy(out, s)
	out[i>>6] |= 1 << (uint(i) & 63)
	return out
}

// subset reports whether s is contained in t.
func (s bitset) subset(t bitset) bool {
	for i, w := range s {
		var o uint64
		if i < len(t) {
			o = t[i]
		}
		if w&^o != 0 {
			return false
		}
	}
	return true
}

// anyNotIn reports whether s holds an element t lacks.
func (s bitset) anyNotIn(t bitset) bool { return !s.subset(t) }

func (s bitset) equal(t bitset) bool {
	n := max(len(s), len(t))
	for i := range n {
		var a, b uint64
		if i < len(s) {
			a = s[i]
		}
		if i < len(t) {
			b = t[i]
		}
		if a != b {
			return false
		}
	}
	return true
}

func (s bitset) count() int {
	c := 0
	for _, w := range s {
		c += bits.OnesCount64(w)
	}
	return c
}

// trie is a byte trie over a set of strings, flattened. Node 0 is the root.
type trie struct {
	nodes []trieNode
	edges []trieEdge
	sub   []bitset // per node, terminals in its subtree (key tries only)
}

type trieNode struct {
	first, n int32 // edges[first:first+n], sorted by byte
	term     int32 // index of the string ending here, or -1
}

type trieEdge struct {
	b  byte
	to int32
}

// child returns the node reached from i by b, or -1.
func (t *trie) child(i int32, b byte) int32 {
	nd := t.nodes[i]
	es := t.edges[nd.first : nd.first+nd.n]
	for _, e := range es {
		if e.b == b {
			return e.to
		}
		if e.b > b {
			break
		}
	}
	return -1
}

func (t *trie) leaf(i int32) bool { return t.nodes[i].n == 0 }

// newTrie builds a trie over strs; terminal i is strs[i]. Duplicate strings
// keep the first index. withSub fills the subtree terminal sets.
func newTrie(strs []string, withSub bool) *trie {
	type bnode struct {
		kids []trieEdge
		term int32
	}
	bn := []bnode{{term: -1}}
	for i, s := range strs {
		cur := int32(0)
		for j := 0; j < len(s); j++ {
			next := int32(-1)
			for _, e := range bn[cur].kids {
				if e.b == s[j] {
					next = e.to
					break
				}
			}
			if next < 0 {
				next = int32(len(bn))
				bn = append(bn, bnode{term: -1})
				bn[cur].kids = append(bn[cur].kids, trieEdge{s[j], next})
			}
			cur = next
		}
		if bn[cur].term < 0 {
			bn[cur].term = int32(i)
		}
	}
	t := &trie{nodes: make([]trieNode, len(bn))}
	for i := range bn {
		kids := bn[i].kids
		slices.SortFunc(kids, func(a, b trieEdge) int { return int(a.b) - int(b.b) })
		t.nodes[i] = trieNode{first: int32(len(t.edges)), n: int32(len(kids)), term: bn[i].term}
		t.edges = append(t.edges, kids...)
	}
	if withSub {
		t.sub = make([]bitset, len(bn))
		// Children always have larger indices than their parent, so a
		// reverse sweep sees every child before its parent.
		for i := len(bn) - 1; i >= 0; i-- {
			var s bitset
			if tm := t.nodes[i].term; tm >= 0 {
				s = s.with(tm)
			}
			nd := t.nodes[i]
			for _, e := range t.edges[nd.first : nd.first+nd.n] {
				s = union(s, t.sub[e.to])
			}
			t.sub[i] = s
		}
	}
	return t
}

func union(a, b bitset) bitset {
	if len(b) == 0 {
		return a
	}
	out := make(bitset, max(len(a), len(b)))
	copy(out, a)
	for i, w := range b {
		out[i] |= w
	}
	return out
}
