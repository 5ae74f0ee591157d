package grammar

import (
	"fmt"
	"slices"
	"strings"
)

// Vocab is a model vocabulary prepared for masking: a byte trie over the
// token pieces. It is immutable and safe for concurrent use; build it once
// per model and share it between generations.
//
// pieces[id] is the exact bytes token id adds to the output text: for
// SentencePiece vocabularies "▁" already replaced by a space, byte-fallback
// tokens such as "<0x41>" given as their one raw byte ("A"), byte-level BPE
// tokens given as the bytes they decode to. Tokens that must never be
// generated inside the value (control, unknown, unused tokens) are given as
// "": an empty piece is never allowed, since it would let generation run
// without progress. tokenizer.Tokenizer.Piece(id, false) returns exactly
// this.
type Vocab struct {
	size   int
	pieces []string
	eog    []int32 // sorted, distinct
	all    vtrie   // every token but the end-of-generation ones and empty pieces
	// plain marks the tokens that are pure string content: no quote, no
	// backslash, no control byte, complete UTF-8. Inside an unbounded
	// string they are always allowed and change nothing, so the mask walk
	// there only visits special, the trie of the other tokens.
	plain   []uint64
	special vtrie
}

// vtrie is a byte trie over token pieces; node 0 is the root (the empty
// prefix).
type vtrie struct {
	nodes []vnode
	ids   []int32 // token ids grouped by node
}

// vnode is a trie node: first child, next sibling (-1 for none), the byte
// on the edge into it, and the tokens whose piece ends here (ids[tok:tok+ntok]).
type vnode struct {
	child, sibling int32
	tok, ntok      int32
	b              byte
}

// NewVocab builds the token tries. eog lists the end-of-generation token
// ids; they are handled apart from their pieces.
func NewVocab(pieces []string, eog []int32) (*Vocab, error) {
	if len(pieces) == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrBadVocab)
	}
	if len(pieces) > 1<<30 {
		return nil, fmt.Errorf("%w: %d tokens", ErrBadVocab, len(pieces))
	}
	v := &Vocab{size: len(pieces), pieces: slices.Clone(pieces), plain: make([]uint64, (len(pieces)+63)/64)}
	for _, id := range eog {
		if id < 0 || int(id) >= len(pieces) {
			return nil, fmt.Errorf("%w: end-of-generation id %d outside the %d tokens", ErrBadVocab, id, len(pieces))
		}
		v.eog = append(v.eog, id)
	}
	slices.Sort(v.eog)
	v.eog = slices.Compact(v.eog)
	order := make([]int32, 0, len(pieces))
	for id, p := range pieces {
		if p != "" && !v.isEOG(int32(id)) {
			order = append(order, int32(id))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := strings.Compare(pieces[a], pieces[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	v.all = buildTrie(pieces, order)
	var special []int32
	for _, id := range order {
		if plainPiece(pieces[id]) {
			v.plain[id>>6] |= 1 << (uint(id) & 63)
		} else {
			special = append(special, id)
		}
	}
	v.special = buildTrie(pieces, special)
	return v, nil
}

// plainPiece reports whether p is string content that leaves a string's
// lexer where it found it.
func plainPiece(p string) bool {
	l := lexNormal
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' {
			return false
		}
		var ok bool
		if l, ok = lexStep(l, p[i]); !ok {
			return false
		}
	}
	return l == lexNormal
}

// buildTrie builds the trie of the tokens order, sorted by piece.
func buildTrie(pieces []string, order []int32) vtrie {
	t := vtrie{nodes: []vnode{{child: -1, sibling: -1}}, ids: order}
	// Sorted pieces share prefixes with their predecessor: keep the path of
	// the previous piece and its last child at each depth.
	path := []int32{0}
	last := []int32{-1} // last child of path[i]
	prev := ""
	for i, id := range order {
		p := pieces[id]
		common := 0
		for common < len(p) && common < len(prev) && p[common] == prev[common] {
			common++
		}
		path, last = path[:common+1], last[:common+1]
		for d := common; d < len(p); d++ {
			nd := int32(len(t.nodes))
			t.nodes = append(t.nodes, vnode{child: -1, sibling: -1, b: p[d], tok: int32(i)})
			if l := last[d]; l >= 0 {
				t.nodes[l].sibling = nd
			} else {
				t.nodes[path[d]].child = nd
			}
			last[d] = nd
			path, last = append(path, nd), append(last, -1)
		}
		end := path[len(p)]
		if t.nodes[end].ntok == 0 {
			t.nodes[end].tok = int32(i)
		}
		t.nodes[end].ntok++
		prev = p
	}
	return t
}

// Size is the number of tokens.
func (v *Vocab) Size() int { return v.size }

// piece returns token id's piece ("" for end-of-generation tokens).
func (v *Vocab) piece(id int32) string {
	if v.isEOG(id) {
		return ""
	}
	return v.pieces[id]
}

func (v *Vocab) isEOG(id int32) bool {
	_, ok := slices.BinarySearch(v.eog, id)
	return ok
}
