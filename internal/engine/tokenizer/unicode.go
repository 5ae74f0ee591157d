package tokenizer

import (
	"sort"
	"sync"
	"unicode"
)

// Code point classes, as llama.cpp's unicode_cpt_flags. Exactly one category
// bit is set for an assigned code point; flagsNone marks "outside the
// fragment" and matches no class.
const (
	fUndefined uint16 = 1 << iota
	fNumber
	fLetter
	fSeparator
	fAccent
	fPunct
	fSymbol
	fControl
	fWhitespace

	flagsNone uint16 = 0
)

const replacementChar = 0xFFFD

// bmpFlags caches the flags of every BMP code point; built once, read-only.
var bmpFlags = sync.OnceValue(func() []uint16 {
	t := make([]uint16, 0x10000)
	for r := range t {
		t[r] = computeFlags(rune(r))
	}
	return t
})

func cptFlags(r rune) uint16 {
	if r >= 0 && r < 0x10000 {
		return bmpFlags()[r]
	}
	return computeFlags(r)
}

func computeFlags(r rune) uint16 {
	var f uint16
	switch {
	case r < 0 || r > unicode.MaxRune:
		return fUndefined
	case unicode.IsLetter(r):
		f = fLetter
	case unicode.Is(unicode.N, r):
		f = fNumber
	case unicode.Is(unicode.M, r):
		f = fAccent
	case unicode.Is(unicode.P, r):
		f = fPunct
	case unicode.Is(unicode.S, r):
		f = fSymbol
	case unicode.Is(unicode.Z, r):
		f = fSeparator
	case unicode.Is(unicode.C, r):
		f = fControl
	default:
		f = fUndefined
	}
	if unicode.Is(unicode.White_Space, r) {
		f |= fWhitespace
	}
	return f
}

// utf8Len is llama.cpp's unicode_len_utf8: the sequence length announced by a
// lead byte, 1 for anything that is not a lead byte.
func utf8Len(b byte) int {
	return [16]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}[b>>4]
}

// decodeRune decodes one code point the lenient way llama.cpp does: no
// overlong or surrogate checks, and an invalid sequence yields U+FFFD while
// consuming a single byte.
func decodeRune(s string, i int) (rune, int) {
	b := s[i]
	switch {
	case b < 0x80:
		return rune(b), 1
	case b&0x40 == 0:
		return replacementChar, 1
	case b&0x20 == 0:
		if i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
			return rune(b&0x1F)<<6 | rune(s[i+1]&0x3F), 2
		}
	case b&0x10 == 0:
		if i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
			return rune(b&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3
		}
	case b&0x08 == 0:
		if i+3 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 && s[i+3]&0xC0 == 0x80 {
			r := rune(b&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
			if r > unicode.MaxRune {
				// llama.cpp cannot re-encode these and aborts; we substitute.
				return replacementChar, 4
			}
			return r, 4
		}
	}
	return replacementChar, 1
}

// decodeRunes appends the code points of s to dst.
func decodeRunes(dst []rune, s string) []rune {
	for i := 0; i < len(s); {
		r, n := decodeRune(s, i)
		dst = append(dst, r)
		i += n
	}
	return dst
}

// appendRune encodes r without validity checks (surrogates pass through), as
// llama.cpp's unicode_cpt_to_utf8 does.
func appendRune(dst []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(dst, byte(r))
	case r < 0x800:
		return append(dst, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	default:
		return append(dst, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
}

// byteToRune is GPT-2's reversible byte-to-printable-character map.
var byteToRune = func() (m [256]rune) {
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = 256 + n
			n++
		}
	}
	return m
}()

// runeToByte inverts byteToRune; -1 where a code point is not a byte image.
var runeToByte = func() (m [324]int16) {
	for i := range m {
		m[i] = -1
	}
	for b, r := range byteToRune {
		m[r] = int16(b)
	}
	return m
}()

type nfdRange struct{ first, last, base rune }

// nfdBase returns the first code point of r's canonical decomposition.
func nfdBase(r rune) rune {
	i := sort.Search(len(nfdRanges), func(i int) bool { return nfdRanges[i].last >= r })
	if i < len(nfdRanges) && nfdRanges[i].first <= r {
		return nfdRanges[i].base
	}
	return r
}
