package tokenizer

import "unicode"

// WordPiece (llama.cpp's llm_tokenizer_wpm): BERT-style normalization and
// splitting, then greedy longest-match per word with a "▁" word prefix.

// wpmWords normalizes text and splits it into words.
func (t *Tokenizer) wpmWords(text string, words []string) []string {
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	for i := 0; i < len(text); {
		r, n := decodeRune(text, i)
		i += n
		if t.stripAccents {
			r = nfdBase(r)
		}
		f := cptFlags(r)
		if f&fWhitespace != 0 {
			flush()
			continue
		}
		if r == 0 || r == replacementChar || f&fControl != 0 {
			continue
		}
		if t.stripAccents && f&fAccent != 0 {
			continue
		}
		lr := r
		if t.lowercase {
			lr = unicode.ToLower(r)
		}
		if f&fPunct != 0 || (r < 0x7F && f&fSymbol != 0) || isChineseChar(r) {
			flush()
			words = append(words, string(appendRune(nil, lr)))
			continue
		}
		cur = appendRune(cur, lr)
	}
	flush()
	return words
}

func isChineseChar(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

func (t *Tokenizer) encodeWPM(text string, out []int32) []int32 {
	for _, word := range t.wpmWords(text, nil) {
		w := "\u2581" + word
		n := len(w)
		mark := len(out)
		for i := 0; i < n; i++ {
			match := false
			for j := min(n, i+t.maxTokenLen+1); j > i; j-- {
				if id, ok := t.ids[w[i:j]]; ok {
					out = append(out, id)
					match = true
					i = j - 1
					break
				}
			}
			if !match {
				out = out[:mark]
				break
			}
		}
		if len(out) == mark && t.unk != null {
			out = append(out, t.unk)
		}
	}
	return out
}
