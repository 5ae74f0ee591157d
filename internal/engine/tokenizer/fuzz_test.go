package tokenizer

import (
	"testing"
	"unicode/utf8"
)

// FuzzEncode checks that encoding arbitrary bytes never panics, yields only
// ids inside the vocabulary and no fewer than MinTokens, and that decoding
// and streaming agree. The seed
// corpus runs as an ordinary test.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{
		"", " ", "Hello world", "don't I'M", "\xff\xfe\x80abc\xe4\xbd", "\xf4\x90\x80\x80", "<s></s><unk>",
		"<|endoftext|><|im_start|>user\nHi<|im_end|>", "🦙 你好 ١٢٣ ½ ℃ ÉAB HELLOWorld", "\t\r\n\v\f\u0085\u3000 x",
		"[CLS] [SEP] [MASK]", "a' b 're  ' s", "\x00\x01\x1f",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	var toks []*Tokenizer
	for _, name := range []string{"llama-spm", "gpt-2", "bert-bge", "deepseek-coder"} {
		toks = append(toks, loadVocab(f, name))
	}
	for _, pre := range []string{"default", "tekken", "deepseek-v3", "deepseek-llm", "llama-bpe", "qwen2", "falcon", "kimi-k2"} {
		v := tinyBPE(pre)
		tok, err := New(v)
		if err != nil {
			f.Fatal(err)
		}
		toks = append(toks, tok)
	}
	f.Fuzz(func(t *testing.T, text string, special bool) {
		for _, tok := range toks {
			ids := tok.Encode(text, EncodeOptions{AddSpecial: special, ParseSpecial: special})
			for _, id := range ids {
				if id < 0 || int(id) >= tok.VocabSize() {
					t.Fatalf("%v: id %d outside vocabulary of %d", tok.Kind(), id, tok.VocabSize())
				}
			}
			if lo := tok.MinTokens(text); lo > len(ids) {
				t.Fatalf("%v: MinTokens %d > %d tokens of %q", tok.Kind(), lo, len(ids), text)
			}
			whole := tok.Decode(ids)
			d := NewStreamDecoder(tok)
			var streamed string
			for _, id := range ids {
				streamed += d.Push(id)
			}
			streamed += d.Flush()
			if streamed != whole {
				t.Fatalf("%v %q: stream %q != decode %q", tok.Kind(), text, streamed, whole)
			}
			if tok.Kind() == KindBPE && utf8.ValidString(text) && !special && !tok.cleanSpaces &&
				tok.VocabSize() < 300 && whole != text {
				// The tiny vocabularies hold every byte, so byte-level BPE without
				// space cleaning must round-trip.
				t.Fatalf("%s: %q round-trips to %q", tok.Pre(), text, whole)
			}
		}
	})
}
