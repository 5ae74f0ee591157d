package tokenizer

// A prompt's token count is known only after Encode, whose cost grows with
// the text: a megabyte-long prompt for a window of a few thousand tokens
// would take seconds to be refused. No token stands for more text than its
// own (escaped) text, so a text of n bytes needs at least n/L tokens, L
// being the longest token's length; MinTokens gives that bound in one
// pass over the bytes. Bytes the tokenizer may drop or swallow count for
// nothing.

// buildBound finds the bytes one token can stand for and the bytes that
// certainly end up in some token's text, or leaves bytesPerToken 0 when the
// vocabulary admits no bound.
func (t *Tokenizer) buildBound() {
	if t.kind == KindWPM {
		return // WordPiece drops whitespace and folds accents: a token can stand for any amount of text
	}
	if t.kind == KindBPE {
		// BPE pre-splitting reads an invalid sequence as U+FFFD, whose
		// bytes must then have tokens for it to count.
		for _, b := range []byte("\uFFFD") {
			if t.byteToks[b] == null {
				return
			}
		}
	}
	stripping := false
	for _, id := range t.special {
		if t.tokens[id].attr&(attrLStrip|attrRStrip) != 0 {
			stripping = true
		}
	}
	t.everyByteCounts = true
	for b, id := range t.byteToks {
		// BPE drops a byte with no token of its own, and so does
		// SentencePiece when it has no unknown token to fall back to; a
		// stripping special token swallows any run of whitespace beside it.
		dropped := id == null && (t.kind != KindSPM || t.unk == null)
		t.counts[b] = !dropped && !(stripping && isCSpace(byte(b)))
		t.everyByteCounts = t.everyByteCounts && t.counts[b]
	}
	t.bytesPerToken = t.maxTokenLen
}

// BytesPerToken returns the longest text one token stands for, when every
// byte of a text counts toward its tokens (so a text of n bytes has at least
// n/BytesPerToken tokens), and 0 otherwise: a bound a caller without the
// tokenizer (the node, before it hands a prompt to a runner) can apply.
func (t *Tokenizer) BytesPerToken() int {
	if !t.everyByteCounts {
		return 0
	}
	return t.bytesPerToken
}

// MinTokens returns a lower bound on the number of tokens Encode makes of
// text, the BOS or EOS of AddSpecial not counted, whatever ParseSpecial is;
// 0 when the vocabulary admits no bound (WordPiece). It reads each byte of
// text at most once and allocates nothing, so a caller with a token budget
// can refuse a text that certainly exceeds it before tokenizing it.
func (t *Tokenizer) MinTokens(text string) int {
	if t.bytesPerToken == 0 {
		return 0
	}
	n := len(text)
	if !t.everyByteCounts {
		n = 0
		for i := 0; i < len(text); i++ {
			if t.counts[text[i]] {
				n++
			}
		}
	}
	return (n + t.bytesPerToken - 1) / t.bytesPerToken
}
