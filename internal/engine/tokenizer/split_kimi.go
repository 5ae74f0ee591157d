package tokenizer

// Kimi K2's split (tokenizer.ggml.pre "kimi-k2"). Its tokenizer_kimi.py
// expression is
//
//	[\p{Han}]+
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// but what a GGUF means is what llama.cpp runs, a hand-written splitter that
// simplifies it: the two case-shaped word alternatives become one run of
// non-Han letters (no upper/lower split, and marks do not join a word), with
// the contraction folded case-insensitively. This reproduces that splitter.

// isHan is llama.cpp's unicode_cpt_is_han: a fixed list of CJK ideograph
// blocks, assigned or not (Extension G and later are not in it).
func isHan(r rune) bool {
	switch {
	case r >= 0x4E00 && r <= 0x9FFF, // CJK Unified Ideographs
		r >= 0x3400 && r <= 0x4DBF,   // Extension A
		r >= 0x20000 && r <= 0x2A6DF, // Extension B
		r >= 0x2A700 && r <= 0x2EBEF, // Extensions C, D, E, F
		r >= 0xF900 && r <= 0xFAFF,   // Compatibility Ideographs
		r >= 0x2F800 && r <= 0x2FA1F: // Compatibility Ideographs Supplement
		return true
	}
	return false
}

// splitKimiK2 splits every span as llama.cpp's kimi-k2 splitter does.
func splitKimiK2(c *splitCtx, in, out []span) []span {
	const other = fLetter | fNumber | fWhitespace
	for _, sg := range in {
		a, e := sg.start, sg.end
		// word reports a non-Han letter inside the span.
		word := func(p int) bool { return c.flags(p, a, e)&fLetter != 0 && !isHan(c.rs[p]) }
		han := func(p int) bool { return p < e && isHan(c.rs[p]) }
		m := emitter{prev: a, out: out}
		for pos := a; pos < e; {
			cpt := c.rs[pos]
			f := c.fl[pos]
			if isHan(cpt) {
				for han(pos) {
					pos++
				}
				m.add(pos)
				continue
			}
			// A non-Han letter run, after at most one code point that is none of
			// CR, LF, letter or number (whitespace included), then an optional
			// contraction.
			lead := !(cpt == '\r' || cpt == '\n' || f&(fLetter|fNumber) != 0)
			if word(pos) || (lead && word(pos+1)) {
				if lead {
					pos++
				}
				for word(pos) {
					pos++
				}
				if pos < e {
					pos += contraction(c.rs, pos, e, true)
				}
				m.add(pos)
				continue
			}
			if f&fNumber != 0 {
				pos = digitGroups(c, &m, pos, a, e, 3)
				continue
			}
			// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
			f2 := f
			if cpt == ' ' {
				f2 = c.flags(pos+1, a, e)
			}
			if f2&other == 0 && f2 != flagsNone {
				if cpt == ' ' {
					pos++
				}
				for g := c.flags(pos, a, e); g&other == 0 && g != flagsNone; g = c.flags(pos, a, e) {
					pos++
				}
				for pos < e && (c.rs[pos] == '\r' || c.rs[pos] == '\n') {
					pos++
				}
				m.add(pos)
				continue
			}
			pos = whitespaceRun(c, &m, pos, a, e, true)
		}
		out = m.out
	}
	return out
}
