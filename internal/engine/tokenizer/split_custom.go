package tokenizer

// The two hand-written splitters llama.cpp itself uses instead of std::regex
// (unicode_regex_split_custom_gpt2 and _llama3), reproduced state for state.

// contraction returns the length of 's|'t|'re|'ve|'m|'ll|'d at pos, or 0.
// foldCase selects the (?i:...) variant.
func contraction(rs []rune, pos, e int, foldCase bool) int {
	if rs[pos] != '\'' || pos+1 >= e {
		return 0
	}
	fold := func(r rune) rune {
		if foldCase && r >= 'A' && r <= 'Z' {
			return r | 0x20
		}
		return r
	}
	n := fold(rs[pos+1])
	if n == 's' || n == 't' || n == 'm' || n == 'd' {
		return 2
	}
	if pos+2 < e {
		nn := fold(rs[pos+2])
		if (n == 'r' && nn == 'e') || (n == 'v' && nn == 'e') || (n == 'l' && nn == 'l') {
			return 3
		}
	}
	return 0
}

// emitter appends the span [prev, end) when it is not empty.
type emitter struct {
	prev int
	out  []span
}

func (m *emitter) add(end int) int {
	n := end - m.prev
	if n > 0 {
		m.out = append(m.out, span{m.prev, end})
	}
	m.prev = end
	return n
}

// splitGPT2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func splitGPT2(c *splitCtx, in, out []span) []span {
	const other = fLetter | fNumber | fWhitespace
	for _, sg := range in {
		a, e := sg.start, sg.end
		m := emitter{prev: a, out: out}
		for pos := a; pos < e; {
			cpt := c.rs[pos]
			f := c.fl[pos]
			if n := contraction(c.rs, pos, e, false); n > 0 {
				pos += m.add(pos + n)
				continue
			}
			f2 := f
			if cpt == ' ' {
				f2 = c.flags(pos+1, a, e)
			}
			switch {
			case f2&fLetter != 0, f2&fNumber != 0:
				class := f2 & (fLetter | fNumber)
				if cpt == ' ' {
					pos++
				}
				for c.flags(pos, a, e)&class != 0 {
					pos++
				}
				m.add(pos)
				continue
			case f2&other == 0 && f2 != flagsNone:
				if cpt == ' ' {
					pos++
				}
				for g := c.flags(pos, a, e); g&other == 0 && g != flagsNone; g = c.flags(pos, a, e) {
					pos++
				}
				m.add(pos)
				continue
			}
			pos = whitespaceRun(c, &m, pos, a, e, false)
		}
		out = m.out
	}
	return out
}

// whitespaceRun handles the trailing alternatives shared by the GPT-2 and
// Llama 3 expressions: (\s*[\r\n]+ when crlf) | \s+(?!\S) | \s+, and a
// single unmatched code point otherwise. It returns the new position.
func whitespaceRun(c *splitCtx, m *emitter, pos, a, e int, crlf bool) int {
	n, lastCRLF := 0, 0
	for c.flags(pos+n, a, e)&fWhitespace != 0 {
		if r := c.rs[pos+n]; r == '\r' || r == '\n' {
			lastCRLF = pos + n + 1
		}
		n++
	}
	switch {
	case crlf && lastCRLF > 0:
		pos = lastCRLF
	case n > 1 && pos+n < e:
		pos += n - 1
	case n > 0:
		pos += n
	default:
		pos++
	}
	m.add(pos)
	return pos
}

// splitLlama3 is the Llama 3 expression with \p{N}{1,maxDigits}:
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// With maxDigits 1 it is Qwen2's expression, which llama.cpp runs through
// std::regex; the splits are the same.
// digitGroups emits the run of digits at pos in groups of at most
// maxDigits (llama3's and kimi-k2's \p{N}{1,3}) and returns its end.
func digitGroups(c *splitCtx, m *emitter, pos, a, e, maxDigits int) int {
	ini := pos
	for c.flags(pos, a, e)&fNumber != 0 {
		pos++
		if pos-ini >= maxDigits {
			m.add(pos)
			ini = pos
		}
	}
	m.add(pos)
	return pos
}

func splitLlama3(maxDigits int) pass {
	return func(c *splitCtx, in, out []span) []span {
		const other = fLetter | fNumber | fWhitespace
		for _, sg := range in {
			a, e := sg.start, sg.end
			m := emitter{prev: a, out: out}
			for pos := a; pos < e; {
				cpt := c.rs[pos]
				f := c.fl[pos]
				if n := contraction(c.rs, pos, e, true); n > 0 {
					pos += m.add(pos + n)
					continue
				}
				if !(cpt == '\r' || cpt == '\n' || f&fNumber != 0) &&
					(f&fLetter != 0 || c.flags(pos+1, a, e)&fLetter != 0) {
					pos++
					for c.flags(pos, a, e)&fLetter != 0 {
						pos++
					}
					m.add(pos)
					continue
				}
				if f&fNumber != 0 {
					pos = digitGroups(c, &m, pos, a, e, maxDigits)
					continue
				}
				f2 := f
				if cpt == ' ' {
					f2 = c.flags(pos+1, a, e)
				}
				// llama.cpp tests the current code point's flags here, not f2's.
				if f2&other == 0 && f != flagsNone {
					if cpt == ' ' {
						pos++
					}
					for g := f2; g&other == 0 && g != flagsNone; g = c.flags(pos, a, e) {
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
}
