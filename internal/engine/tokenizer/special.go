package tokenizer

import "strings"

// fragment is either a token already decided (tok >= 0) or raw text.
type fragment struct {
	tok        int32
	start, end int
}

// partition splits text around special tokens, longest first, as
// llama.cpp's tokenizer_st_partition. Control and unknown tokens are matched
// only with parseSpecial; user-defined tokens always are.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	frags := []fragment{{tok: null, start: 0, end: len(text)}}
	if len(text) == 0 {
		return nil
	}
	var next []fragment
	for _, id := range t.present(text, parseSpecial) {
		td := t.tokens[id]
		next = next[:0]
		for _, f := range frags {
			if f.tok != null {
				next = append(next, f)
				continue
			}
			next = t.splitFragment(text, f, id, td, next)
		}
		frags, next = next, frags
	}
	return frags
}

// present returns the special tokens that occur in text, in match order.
func (t *Tokenizer) present(text string, parseSpecial bool) []int32 {
	var ids []int32
	for _, id := range t.special {
		td := t.tokens[id]
		if !parseSpecial && td.attr&(attrControl|attrUnknown) != 0 {
			continue
		}
		if strings.Contains(text, td.text) {
			ids = append(ids, id)
		}
	}
	return ids
}

func (t *Tokenizer) splitFragment(text string, f fragment, id int32, td tokenData, out []fragment) []fragment {
	s, e := f.start, f.end
	for {
		i := strings.Index(text[s:e], td.text)
		if i < 0 {
			if e > s {
				out = append(out, fragment{tok: null, start: s, end: e})
			}
			return out
		}
		m := s + i
		l := m
		if td.attr&attrLStrip != 0 {
			for l > s && isCSpace(text[l-1]) {
				l--
			}
		}
		if l > s {
			out = append(out, fragment{tok: null, start: s, end: l})
		}
		out = append(out, fragment{tok: id, start: m, end: m + len(td.text)})
		r := m + len(td.text)
		if r >= e {
			return out
		}
		if td.attr&attrRStrip != 0 {
			for r < e && isCSpace(text[r]) {
				r++
			}
		}
		s = r
	}
}

func isCSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }
