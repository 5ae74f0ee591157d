package tokenizer

import "strings"

// EncodeOptions are llama_tokenize's flags.
type EncodeOptions struct {
	AddSpecial   bool // add BOS/EOS as the model asks ([CLS]/[SEP] for WordPiece)
	ParseSpecial bool // recognise control tokens written in the text
}

// Encode tokenizes text. Invalid UTF-8 is tokenized as llama.cpp does
// (U+FFFD for BPE pre-splitting, byte tokens for SentencePiece).
func (t *Tokenizer) Encode(text string, opt EncodeOptions) []int32 {
	frags := t.partition(text, opt.ParseSpecial)
	var out []int32
	switch t.kind {
	case KindSPM:
		if opt.AddSpecial && t.addBOS {
			out = append(out, t.bos)
		}
		var st spmState
		var buf []byte
		prevSpecial := true
		for _, f := range frags {
			if f.tok != null {
				out = append(out, f.tok)
				prevSpecial = true
				continue
			}
			buf = buf[:0]
			if t.addSpacePrefix && prevSpecial {
				buf = append(buf, "\u2581"...)
			}
			buf = appendEscaped(buf, text[f.start:f.end])
			out = t.encodeSPM(&st, buf, out)
			prevSpecial = false
		}
		if opt.AddSpecial && t.addEOS {
			out = append(out, t.eos)
		}
	case KindBPE:
		if opt.AddSpecial && t.addBOS {
			out = append(out, t.bos)
		}
		var st bpeState
		var c splitCtx
		var a, b []span
		for _, f := range frags {
			if f.tok != null {
				out = append(out, f.tok)
				continue
			}
			frag := text[f.start:f.end]
			a, b = t.split.preSplit(&c, frag, a, b)
			var word []byte
			for _, w := range a {
				word = word[:0]
				for _, r := range c.rs[w.start:w.end] {
					word = appendRune(word, r)
				}
				out = t.encodeWord(&st, word, out)
			}
		}
		if opt.AddSpecial && t.addEOS {
			out = append(out, t.eos)
		}
	case KindWPM:
		if opt.AddSpecial {
			out = append(out, t.bos)
		}
		for _, f := range frags {
			if f.tok != null {
				out = append(out, f.tok)
				continue
			}
			out = t.encodeWPM(text[f.start:f.end], out)
		}
		if opt.AddSpecial {
			out = append(out, t.sep)
		}
	}
	return out
}

// appendEscaped appends s with every space replaced by U+2581.
func appendEscaped(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, "\u2581"...)
		s = s[i+1:]
	}
}
