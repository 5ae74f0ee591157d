package tokenizer

// StreamDecoder turns generated tokens into text one token at a time. The
// concatenation of everything Push and Flush return equals Decode of the
// whole sequence, and no returned string ends inside a UTF-8 sequence that a
// later token could complete. It is not safe for concurrent use.
type StreamDecoder struct {
	t       *Tokenizer
	first   bool
	pending []byte // decoded bytes not yet returned

	// Incremental scan for cleanCut, so a long run without a safe cut
	// costs linear time overall: pending[:scanned] has been examined, run
	// safe bytes end at scanned, and best is the last safe cut found.
	scanned, run, best int
}

// NewStreamDecoder starts decoding a new sequence.
func NewStreamDecoder(t *Tokenizer) *StreamDecoder {
	return &StreamDecoder{t: t, first: true}
}

// Push adds one token and returns the text that has become final.
func (d *StreamDecoder) Push(id int32) string {
	d.pending = append(d.pending, d.t.piece(id, d.first && d.t.addSpacePrefix, false)...)
	d.first = false
	var cut int
	if d.t.cleanSpaces {
		cut = d.cleanCut()
	} else {
		cut = utf8Cut(d.pending)
	}
	return d.take(cut)
}

// Flush returns whatever is still held back, at the end of the sequence.
func (d *StreamDecoder) Flush() string {
	return d.take(len(d.pending))
}

func (d *StreamDecoder) take(n int) string {
	if n == 0 {
		return ""
	}
	chunk := d.pending[:n]
	if d.t.cleanSpaces {
		chunk = cleanSpaces(append([]byte(nil), chunk...))
	}
	s := string(chunk)
	d.pending = append(d.pending[:0], d.pending[n:]...)
	d.scanned -= n
	d.best = 0
	return s
}

// utf8Cut returns len(b) unless b ends in an incomplete UTF-8 sequence, in
// which case it returns where that sequence starts.
func utf8Cut(b []byte) int {
	for k := len(b) - 1; k >= 0 && k >= len(b)-3; k-- {
		c := b[k]
		if c&0xC0 == 0x80 {
			continue // continuation byte: look further back for its lead
		}
		if c >= 0xC2 && c <= 0xF4 && utf8Len(c) > len(b)-k {
			return k
		}
		return len(b)
	}
	return len(b)
}

// cleanCut returns the largest p such that cleaning pending[:p] and
// pending[p:] separately equals cleaning pending: the four bytes before p and
// the byte at p are neither spaces nor apostrophes (the cleaning rules look
// no further), and p starts a character. pending always starts at such a
// cut, so fewer than four safe bytes after its start are enough.
func (d *StreamDecoder) cleanCut() int {
	b := d.pending
	for ; d.scanned < len(b); d.scanned++ {
		p, c := d.scanned, b[d.scanned]
		safe := c != ' ' && c != '\''
		if safe && c&0xC0 != 0x80 && p > 0 && d.run >= min(p, 4) {
			d.best = p
		}
		if safe {
			d.run++
		} else {
			d.run = 0
		}
	}
	return d.best
}
