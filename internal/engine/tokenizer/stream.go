package tokenizer

// StreamDecoder turns generated tokens into text one token at a time. The
// concatenation of everything Push and Flush return equals Decode of the
// whole sequence, and no returned string ends inside a UTF-8 sequence that a
// later token could complete. It is not safe for concurrent use.
type StreamDecoder struct {
	t       *Tokenizer
	first   bool
	pending []byte // decoded bytes not yet returned
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
		cut = cleanCut(d.pending)
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

// cleanCut returns the largest p such that cleaning b[:p] and b[p:]
// separately equals cleaning b: the four bytes before p and the byte at p
// are neither spaces nor apostrophes (the cleaning rules look at most that
// far), and p starts a character. Bytes before the start of b are a
// previous cut's safe tail, so a short prefix is enough.
func cleanCut(b []byte) int {
	safe := func(c byte) bool { return c != ' ' && c != '\'' }
	run := 0 // safe bytes ending just before p
	best := 0
	for p := 0; p < len(b); p++ {
		c := b[p]
		if safe(c) && c&0xC0 != 0x80 && p > 0 && (run >= 4 || run == p) {
			best = p
		}
		if safe(c) {
			run++
		} else {
			run = 0
		}
	}
	return best
}
