package tokenizer

import (
	"slices"
	"testing"
)

// tinySPM is a hand-built SentencePiece vocabulary with byte fallback.
func tinySPM() Vocab {
	toks := []string{"<unk>", "<s>", "</s>"}
	types := []int32{TypeUnknown, TypeControl, TypeControl}
	for b := 0; b < 256; b++ {
		toks = append(toks, "<0x"+string("0123456789ABCDEF"[b>>4])+string("0123456789ABCDEF"[b&15])+">")
		types = append(types, TypeByte)
	}
	for _, s := range []string{"▁", "h", "e", "l", "o", "▁h", "he", "ll", "llo", "▁hello", "▁he"} {
		toks = append(toks, s)
		types = append(types, TypeNormal)
	}
	scores := make([]float32, len(toks))
	for i := range scores {
		scores[i] = float32(i) // later tokens win ties of merge order
	}
	return Vocab{Model: "llama", Tokens: toks, Types: types, Scores: scores}
}

func TestTinySPM(t *testing.T) {
	tok, err := New(tinySPM())
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int32 { return tok.ids[s] }
	tests := []struct {
		name string
		text string
		opt  EncodeOptions
		want []int32
		dec  string // Decode of want
	}{
		{"merges by score", "hello", EncodeOptions{}, []int32{id("▁hello")}, "hello"},
		// As llama.cpp: only the first token loses its leading space, and
		// here that is the (invisible) BOS.
		{"bos", "hello", EncodeOptions{AddSpecial: true}, []int32{1, id("▁hello")}, " hello"},
		{"byte fallback", "hé", EncodeOptions{}, []int32{id("▁h"), id("<0xC3>"), id("<0xA9>")}, "hé"},
		{"special as text", "<s>", EncodeOptions{}, []int32{id("▁"), id("<0x3C>"), id("<0x73>"), id("<0x3E>")}, "<s>"},
		{"special parsed then prefix", "<s>hello", EncodeOptions{ParseSpecial: true}, []int32{1, id("▁hello")}, " hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tok.Encode(tt.text, tt.opt)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Encode(%q) = %v, want %v", tt.text, got, tt.want)
			}
			if dec := tok.Decode(got); dec != tt.dec {
				t.Errorf("Decode = %q, want %q", dec, tt.dec)
			}
		})
	}
	if tok.BOS() != 1 || tok.EOS() != 2 || !tok.AddBOS() || tok.AddEOS() || !tok.IsEOG(2) {
		t.Errorf("defaults: bos %d eos %d addBOS %v addEOS %v", tok.BOS(), tok.EOS(), tok.AddBOS(), tok.AddEOS())
	}
}
