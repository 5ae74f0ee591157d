package tokenizer

// SentencePiece (llama.cpp's llm_tokenizer_spm): repeatedly merge the
// adjacent pair whose concatenation is the highest-scoring token, then emit
// each symbol as its token or, failing that, as byte tokens.

type spmSymbol struct {
	prev, next int32
	start, n   int32
}

type spmBigram struct {
	score       float32
	left, right int32
	size        int32
}

// spmBefore orders the queue: higher score first, then the leftmost pair.
func spmBefore(a, b spmBigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

type spmHeap []spmBigram

func (h *spmHeap) push(x spmBigram) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !spmBefore(s[i], s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *spmHeap) pop() spmBigram {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && spmBefore(s[l], s[m]) {
			m = l
		}
		if r < len(s) && spmBefore(s[r], s[m]) {
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

type spmState struct {
	syms  []spmSymbol
	queue spmHeap
}

// encodeSPM tokenizes text whose spaces are already escaped as U+2581.
func (t *Tokenizer) encodeSPM(st *spmState, text []byte, out []int32) []int32 {
	st.syms = st.syms[:0]
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		i := int32(len(st.syms))
		st.syms = append(st.syms, spmSymbol{prev: i - 1, next: i + 1, start: int32(off), n: int32(n)})
		off += n
	}
	if len(st.syms) == 0 {
		return out
	}
	st.syms[len(st.syms)-1].next = null
	st.queue = st.queue[:0]
	for i := 1; i < len(st.syms); i++ {
		t.spmBigram(st, text, int32(i-1), int32(i))
	}
	syms := st.syms
	for len(st.queue) > 0 {
		b := st.queue.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next != null {
			syms[r.next].prev = b.left
		}
		t.spmBigram(st, text, l.prev, b.left)
		t.spmBigram(st, text, b.left, l.next)
	}
	for i := int32(0); i != null; i = syms[i].next {
		s := syms[i]
		piece := text[s.start : s.start+s.n]
		if id, ok := t.ids[string(piece)]; ok {
			out = append(out, id)
			continue
		}
		// Merged symbols are always tokens, so only single characters get
		// here; llama.cpp's rev_merge lookup can never hit for them.
		for _, c := range piece {
			if id := t.byteToks[c]; id != null {
				out = append(out, id)
			} else if t.unk != null {
				out = append(out, t.unk) // llama.cpp throws here
			}
		}
	}
	return out
}

func (t *Tokenizer) spmBigram(st *spmState, text []byte, left, right int32) {
	if left == null || right == null {
		return
	}
	l, r := st.syms[left], st.syms[right]
	id, ok := t.ids[string(text[l.start:r.start+r.n])]
	if !ok {
		return
	}
	st.queue.push(spmBigram{score: t.tokens[id].score, left: left, right: right, size: l.n + r.n})
}
