package tokenizer

import "sort"

// Splitters for the pre-tokenizer expressions llama.cpp hands to std::regex.
// llama.cpp first "collapses" the text: every code point >= 128 becomes one
// byte naming its category (whitespace becomes \v), and \p{X} in the
// expression becomes that byte plus an ASCII list. The predicates below
// reproduce the resulting classes, ASCII quirks included (for instance '~'
// is in neither \p{P} nor \p{S}).

// matcher tries an expression at p within [p, e). On success it returns the
// end of the match (> p); otherwise it returns -next, where next > p is the
// first position worth trying again.
type matcher func(c *splitCtx, p, e int) int

// regexPass splits each span into matches and the gaps between them, as
// std::regex_iterator does in unicode_regex_split_stl.
func regexPass(m matcher) pass {
	return func(c *splitCtx, in, out []span) []span {
		for _, sg := range in {
			start := sg.start
			for p := sg.start; p < sg.end; {
				end := m(c, p, sg.end)
				if end <= 0 {
					p = -end
					continue
				}
				if p > start {
					out = append(out, span{start, p})
				}
				out = append(out, span{p, end})
				p, start = end, end
			}
			if start < sg.end {
				out = append(out, span{start, sg.end})
			}
		}
		return out
	}
}

type class func(r rune, f uint16) bool

// runOf matches [class]{lo,hi}; hi 0 means unbounded.
func runOf(cl class, lo, hi int) matcher {
	return func(c *splitCtx, p, e int) int {
		q := p
		for q < e && (hi == 0 || q-p < hi) && cl(c.rs[q], c.fl[q]) {
			q++
		}
		if q-p >= lo && q > p {
			return q
		}
		return -(p + 1)
	}
}

// optSpaceRun matches \s?[class]+.
func optSpaceRun(space, cl class) matcher {
	run := runOf(cl, 1, 0)
	return func(c *splitCtx, p, e int) int {
		if space(c.rs[p], c.fl[p]) && p+1 < e {
			if end := run(c, p+1, e); end > 0 {
				return end
			}
		}
		return run(c, p, e)
	}
}

// trailingSpace matches \s+$ (the end of the span).
func trailingSpace(c *splitCtx, p, e int) int {
	q := p
	for q < e && wSpace(c.rs[q], c.fl[q]) {
		q++
	}
	switch {
	case q == p:
		return -(p + 1)
	case q == e:
		return e
	}
	return -q // no later start inside this run can reach the end either
}

// Collapsed-text classes.

func reSpace(r rune, f uint16) bool {
	if r < 128 {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return f&fWhitespace != 0
}

func reL(r rune, f uint16) bool {
	if r < 128 {
		return isASCIILetter(r)
	}
	return f&(fLetter|fWhitespace) == fLetter
}

func reN(r rune, f uint16) bool {
	if r < 128 {
		return r >= '0' && r <= '9'
	}
	return f&(fNumber|fWhitespace) == fNumber
}

func reP(r rune, f uint16) bool {
	if r < 128 {
		return asciiP[r]
	}
	return f&(fPunct|fWhitespace) == fPunct
}

func reS(r rune, f uint16) bool {
	if r < 128 {
		return asciiS[r]
	}
	return f&(fSymbol|fWhitespace) == fSymbol
}

func reM(r rune, f uint16) bool {
	return r >= 128 && f&(fAccent|fWhitespace) == fAccent
}

// asciiP and asciiS are the ASCII lists llama.cpp substitutes for \p{P} and
// \p{S}: !-#%-*,-/:-;?-@[-]_{} and $+<=>^`|.
var asciiP, asciiS = func() (p, s [128]bool) {
	for _, r := range "!\"#%&'()*,-./:;?@[\\]_{}" {
		p[r] = true
	}
	for _, r := range "$+<=>^`|" {
		s[r] = true
	}
	return
}()

func isASCIILetter(r rune) bool          { return (r|0x20) >= 'a' && (r|0x20) <= 'z' }
func isASCIIDigit(r rune, _ uint16) bool { return r >= '0' && r <= '9' }
func isCRLF(r rune, _ uint16) bool       { return r == '\r' || r == '\n' }

// [\p{P}\$\+<=>\^~\|]+ and falcon's variant with a backtick.
func isDefaultPunct(r rune, f uint16) bool {
	return reP(r, f) || r == '$' || r == '+' || r == '<' || r == '=' || r == '>' || r == '^' || r == '~' || r == '|'
}

func isFalconPunct(r rune, f uint16) bool { return isDefaultPunct(r, f) || r == '`' }

// Expressions without \p{...} run through std::wregex on the code points,
// with non-ASCII whitespace replaced by \v.

func wchar(r rune, f uint16) rune {
	if r >= 128 && f&fWhitespace != 0 {
		return '\v'
	}
	return r
}

func wSpace(r rune, f uint16) bool { return reSpace(wchar(r, f), 0) }

type runeRange struct{ lo, hi rune }

// inClass matches wchar(r) against sorted ranges.
func inClass(rr []runeRange) class {
	return func(r rune, f uint16) bool {
		w := wchar(r, f)
		i := sort.Search(len(rr), func(i int) bool { return rr[i].hi >= w })
		return i < len(rr) && rr[i].lo <= w
	}
}

// parseClass turns the body of a bracket expression ("a-zA-Z...") into
// sorted ranges.
func parseClass(body string) []runeRange {
	rs := []rune(body)
	var out []runeRange
	for i := 0; i < len(rs); i++ {
		if i+2 < len(rs) && rs[i+1] == '-' {
			out = append(out, runeRange{rs[i], rs[i+2]})
			i += 2
			continue
		}
		out = append(out, runeRange{rs[i], rs[i]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].lo < out[j].lo })
	return out
}

var (
	// DeepSeek's letter class, from its tokenizer.json.
	deepseekLetters = parseClass("A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃")
	deepseekPunct   = parseClass("!-/:-~！-／：-～‘-‟　-。")
	cjkDeepseek     = parseClass("一-龥ࠀ-一가-퟿")
	cjkKana         = parseClass("一-龥぀-ゟ゠-ヿ")
)

// asciiPunct is [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~].
func asciiPunct(r rune) bool {
	return (r >= '!' && r <= '/') || (r >= ':' && r <= '@') || (r >= '[' && r <= '`') || (r >= '{' && r <= '~')
}

// spaceTail handles \s*[\r\n]+|\s+(?!\S)|\s+ at p; 0 when p is not space.
func spaceTail(c *splitCtx, p, e int) int {
	q, lastCRLF := p, 0
	for q < e && reSpace(c.rs[q], c.fl[q]) {
		if c.rs[q] == '\r' || c.rs[q] == '\n' {
			lastCRLF = q + 1
		}
		q++
	}
	switch {
	case lastCRLF > 0:
		return lastCRLF
	case q-p > 1 && q < e:
		return q - 1
	case q > p:
		return q
	}
	return 0
}

// punctRun handles " ?[class]+[tail]*" at p; 0 when it does not match.
func punctRun(c *splitCtx, p, e int, cl class, tail func(rune) bool) int {
	q := p
	if c.rs[q] == ' ' && q+1 < e && cl(c.rs[q+1], c.fl[q+1]) {
		q++
	}
	if !cl(c.rs[q], c.fl[q]) {
		return 0
	}
	for q < e && cl(c.rs[q], c.fl[q]) {
		q++
	}
	for q < e && tail(c.rs[q]) {
		q++
	}
	return q
}

func isPS(r rune, f uint16) bool { return reP(r, f) || reS(r, f) }
func isLM(r rune, f uint16) bool { return reL(r, f) || reM(r, f) }

// deepseekV3Words is DeepSeek-V3's third expression:
// [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func deepseekV3Words(c *splitCtx, p, e int) int {
	r, f := c.rs[p], c.fl[p]
	if asciiPunct(r) && p+1 < e && isASCIILetter(c.rs[p+1]) {
		q := p + 1
		for q < e && isASCIILetter(c.rs[q]) {
			q++
		}
		return q
	}
	if !(r == '\r' || r == '\n' || reL(r, f) || isPS(r, f)) && p+1 < e && isLM(c.rs[p+1], c.fl[p+1]) {
		q := p + 1
		for q < e && isLM(c.rs[q], c.fl[q]) {
			q++
		}
		return q
	}
	if isLM(r, f) {
		q := p
		for q < e && isLM(c.rs[q], c.fl[q]) {
			q++
		}
		return q
	}
	if q := punctRun(c, p, e, isPS, isCRLFRune); q > 0 {
		return q
	}
	if q := spaceTail(c, p, e); q > 0 {
		return q
	}
	return -(p + 1)
}

func isCRLFRune(r rune) bool      { return r == '\r' || r == '\n' }
func isCRLFSlashRune(r rune) bool { return r == '\r' || r == '\n' || r == '/' }

// Tekken's letters: (?=\p{L})[^a-z] is "upper" and (?=\p{L})[^A-Z] "lower";
// a collapsed non-ASCII letter is both.
func tekkenUpper(r rune, f uint16) bool { return reL(r, f) && !(r >= 'a' && r <= 'z') }
func tekkenLower(r rune, f uint16) bool { return reL(r, f) && !(r >= 'A' && r <= 'Z') }

func runEnd(c *splitCtx, q, e int, cl class) int {
	for q < e && cl(c.rs[q], c.fl[q]) {
		q++
	}
	return q
}

// caseWords is the expression Mistral's Tekken and OpenAI's o200k (GPT-4o)
// share, with U and W the tekkenUpper and tekkenLower classes above:
// [^\r\n\p{L}\p{N}]?U*W+C?|[^\r\n\p{L}\p{N}]?U+W*C?|\p{N}{1,digits}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// where C is GPT-4o's (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])
// when contractions is set; Tekken has no C and digits 1.
func caseWords(digits int, contractions bool) matcher {
	notWord := func(r rune, f uint16) bool { return !(reSpace(r, f) || reL(r, f) || reN(r, f)) }
	// suffix appends the optional contraction; being optional it never
	// makes the letter runs before it backtrack.
	suffix := func(c *splitCtx, q, e int) int {
		if contractions && q < e {
			q += contraction(c.rs, q, e, true)
		}
		return q
	}
	return func(c *splitCtx, p, e int) int {
		r, f := c.rs[p], c.fl[p]
		s := p
		if !(r == '\r' || r == '\n' || reL(r, f) || reN(r, f)) {
			s = p + 1 // the optional prefix; without it no letter can follow at p
		}
		// U*W+ with backtracking: the longest U* run after which a W follows.
		u := runEnd(c, s, e, tekkenUpper)
		for k := u; k >= s; k-- {
			if k < e && tekkenLower(c.rs[k], c.fl[k]) {
				return suffix(c, runEnd(c, k, e, tekkenLower), e)
			}
		}
		if u > s {
			return suffix(c, runEnd(c, u, e, tekkenLower), e)
		}
		if reN(r, f) {
			q := p + 1
			for q < e && q-p < digits && reN(c.rs[q], c.fl[q]) {
				q++
			}
			return q
		}
		if q := punctRun(c, p, e, notWord, isCRLFSlashRune); q > 0 {
			return q
		}
		if q := spaceTail(c, p, e); q > 0 {
			return q
		}
		return -(p + 1)
	}
}
