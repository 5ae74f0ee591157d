package tokenizer

import "strings"

// DecodeOptions are llama_detokenize's flags.
type DecodeOptions struct {
	RemoveSpecial  bool // drop a leading BOS and trailing EOS the model adds
	UnparseSpecial bool // render control and unknown tokens as their text
}

// buildPieces caches each token's text as token_to_piece(special=true)
// renders it.
func (t *Tokenizer) buildPieces() {
	t.pieces = make([]string, len(t.tokens))
	for id, td := range t.tokens {
		t.pieces[id] = t.renderPiece(td)
	}
}

func (t *Tokenizer) renderPiece(td tokenData) string {
	switch {
	case td.attr&(attrUnknown|attrControl|attrUserDefined) != 0:
		return td.text
	case td.attr&attrNormal != 0:
		if t.kind == KindBPE {
			return decodeByteLevel(td.text)
		}
		return strings.ReplaceAll(td.text, "\u2581", " ")
	case td.attr&attrByte != 0:
		return string([]byte{byteTokenValue(td.text)})
	}
	return ""
}

// byteTokenValue parses "<0xNN>" as strtol(text.substr(3, 2), 16) does.
func byteTokenValue(s string) byte {
	if len(s) < 3 {
		return 0
	}
	s = s[3:min(len(s), 5)]
	var v byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v*16 + c - '0'
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			v = v*16 + (c | 0x20 - 'a' + 10)
		default:
			return v
		}
	}
	return v
}

// decodeByteLevel maps GPT-2 byte images back to bytes; a code point that is
// no byte image is kept visible as llama.cpp does.
func decodeByteLevel(text string) string {
	var b []byte
	for i := 0; i < len(text); {
		r, n := decodeRune(text, i)
		if r >= 0 && int(r) < len(runeToByte) && runeToByte[r] >= 0 {
			b = append(b, byte(runeToByte[r]))
		} else {
			b = append(b, "[UNK_BYTE_0x"...)
			for _, c := range []byte(text[i : i+n]) {
				b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			}
			b = append(b, text...)
			b = append(b, ']')
		}
		i += n
	}
	return string(b)
}

// piece is token_to_piece: the token's text with lstrip leading spaces
// removed, empty for control and unknown tokens unless special.
func (t *Tokenizer) piece(id int32, lstrip, special bool) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	if !special && t.tokens[id].attr&(attrUnknown|attrControl) != 0 {
		return ""
	}
	p := t.pieces[id]
	if lstrip && len(p) > 0 && p[0] == ' ' {
		p = p[1:]
	}
	return p
}

// TokenText returns a token's text as stored in the vocabulary, or "" for an
// id outside it.
func (t *Tokenizer) TokenText(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id].text
}

// Piece returns the text a token decodes to on its own, with control and
// unknown tokens rendered only when special is set.
func (t *Tokenizer) Piece(id int32, special bool) string { return t.piece(id, false, special) }

// Decode turns ids back into text as llama_detokenize(remove_special=false,
// unparse_special=false) does. Ids outside the vocabulary decode to nothing.
func (t *Tokenizer) Decode(ids []int32) string { return t.DecodeWith(ids, DecodeOptions{}) }

// DecodeWith is Decode with explicit options.
func (t *Tokenizer) DecodeWith(ids []int32, opt DecodeOptions) string {
	removeSpace := t.addSpacePrefix
	if opt.RemoveSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		removeSpace = false
		ids = ids[1:]
	}
	if opt.RemoveSpecial && t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	var b []byte
	for i, id := range ids {
		b = append(b, t.piece(id, removeSpace && i == 0, opt.UnparseSpecial)...)
	}
	if t.cleanSpaces {
		b = cleanSpaces(b)
	}
	return string(b)
}

// cleanSpaces is clean_up_tokenization_spaces as llama.cpp implements it:
// " ?" " !" " ." " ," lose the space, " ' " becomes "'", and " 's" " 'm"
// " 're" " 've" lose the space.
func cleanSpaces(s []byte) []byte {
	if len(s) == 0 {
		return s
	}
	out := s[:1]
	for i := 1; i < len(s); i++ {
		x := s[i]
		if s[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			out = out[:len(out)-1]
		}
		out = append(out, x)
	}
	s = out
	out = s[:1]
	for i := 1; i < len(s); i++ {
		x := s[i]
		if x == '\'' && i+1 < len(s) && s[i-1] == ' ' && s[i+1] == ' ' {
			out = out[:len(out)-1]
			s[i+1] = 0 // the next space is skipped and must not count as a space
			out = append(out, x)
			i++
			continue
		}
		out = append(out, x)
	}
	s = out
	out = s[:1]
	for i := 1; i < len(s); i++ {
		x := s[i]
		if s[i-1] == ' ' && x == '\'' && i+1 < len(s) {
			x1 := s[i+1]
			switch {
			case x1 == 't' || x1 == 'd':
			case x1 == 's' || x1 == 'm':
				out = out[:len(out)-1]
			case i+2 < len(s):
				x2 := s[i+2]
				if (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e') {
					out = out[:len(out)-1]
				}
			}
		}
		out = append(out, x)
	}
	return out
}
