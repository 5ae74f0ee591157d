package tokenizer

import "strings"

// mergeTable holds BPE merge ranks. Every string that occurs in a merge (each
// side and their concatenation) is interned, so merging works on integer ids
// instead of string pairs; a symbol whose text is not interned cannot take
// part in any merge.
type mergeTable struct {
	intern map[string]int32
	pairs  map[uint64]merge
}

type merge struct {
	rank   int32
	result int32 // interned id of left+right
}

func buildMerges(lines []string) mergeTable {
	m := mergeTable{intern: make(map[string]int32, len(lines)), pairs: make(map[uint64]merge, len(lines))}
	id := func(s string) int32 {
		if v, ok := m.intern[s]; ok {
			return v
		}
		v := int32(len(m.intern))
		m.intern[s] = v
		return v
	}
	for rank, line := range lines {
		// As llama.cpp: split at the first space after the first byte; a line
		// without one is the pair ("", "").
		var left, right string
		if len(line) > 1 {
			if i := strings.IndexByte(line[1:], ' '); i >= 0 {
				left, right = line[:i+1], line[i+2:]
			}
		}
		key := pairKey(id(left), id(right))
		if _, dup := m.pairs[key]; dup {
			continue // the first rank wins
		}
		m.pairs[key] = merge{rank: int32(rank), result: id(left + right)}
	}
	return m
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

type bpeSymbol struct {
	prev, next int32
	start, n   int32 // byte span in the word
	id         int32 // interned id, or null
}

type bpeBigram struct {
	rank        int32
	left, right int32
	lid, rid    int32 // interned ids when queued, to detect stale entries
}

func bigramLess(a, b bpeBigram) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.left < b.left)
}

// bigramHeap is a binary min-heap by (rank, left), as llama.cpp's queue.
type bigramHeap []bpeBigram

func (h *bigramHeap) push(x bpeBigram) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !bigramLess(s[i], s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *bigramHeap) pop() bpeBigram {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && bigramLess(s[l], s[m]) {
			m = l
		}
		if r < len(s) && bigramLess(s[r], s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// bpeState is the scratch space of one Encode call.
type bpeState struct {
	word  []byte // byte-encoded word
	syms  []bpeSymbol
	queue bigramHeap
}

// encodeWord merges one pre-tokenized word (raw UTF-8) and appends its ids.
func (t *Tokenizer) encodeWord(st *bpeState, raw []byte, out []int32) []int32 {
	st.word = st.word[:0]
	for i := 0; i < len(raw); i++ {
		st.word = appendRune(st.word, byteToRune[raw[i]])
	}
	w := st.word
	if t.ignoreMerges {
		if id, ok := t.ids[string(w)]; ok {
			return append(out, id)
		}
	}
	st.syms = st.syms[:0]
	for off := 0; off < len(w); {
		n := min(utf8Len(w[off]), len(w)-off)
		id, ok := t.merges.intern[string(w[off:off+n])]
		if !ok {
			id = null
		}
		i := int32(len(st.syms))
		st.syms = append(st.syms, bpeSymbol{prev: i - 1, next: i + 1, start: int32(off), n: int32(n), id: id})
		off += n
	}
	if len(st.syms) == 0 {
		return out
	}
	st.syms[len(st.syms)-1].next = null
	st.queue = st.queue[:0]
	for i := 1; i < len(st.syms); i++ {
		t.addBigram(st, int32(i-1), int32(i))
	}
	syms := st.syms
	for len(st.queue) > 0 {
		b := st.queue.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.id != b.lid || r.id != b.rid {
			continue // outdated
		}
		l.n += r.n
		l.id = t.merges.pairs[pairKey(b.lid, b.rid)].result
		r.n = 0
		l.next = r.next
		if r.next != null {
			syms[r.next].prev = b.left
		}
		t.addBigram(st, l.prev, b.left)
		t.addBigram(st, b.left, l.next)
	}
	for i := int32(0); i != null; i = syms[i].next {
		s := syms[i]
		text := w[s.start : s.start+s.n]
		if id, ok := t.ids[string(text)]; ok {
			out = append(out, id)
			continue
		}
		// No token for the symbol: llama.cpp tries each byte of the
		// byte-encoded text as a one-byte token and drops the misses.
		for _, c := range text {
			if id, ok := t.ids[string([]byte{c})]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}

func (t *Tokenizer) addBigram(st *bpeState, left, right int32) {
	if left == null || right == null {
		return
	}
	lid, rid := st.syms[left].id, st.syms[right].id
	if lid == null || rid == null {
		return
	}
	m, ok := t.merges.pairs[pairKey(lid, rid)]
	if !ok {
		return
	}
	st.queue.push(bpeBigram{rank: m.rank, left: left, right: right, lid: lid, rid: rid})
}
