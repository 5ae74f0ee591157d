package tokenizer

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMinTokensIsALowerBound: for every fixture vocabulary, MinTokens never
// exceeds the count Encode gives, on llama.cpp's test texts and on texts
// made to be cheap in tokens (the longest token repeated, whitespace runs
// beside the special tokens that swallow it).
func TestMinTokensIsALowerBound(t *testing.T) {
	for _, name := range vocabNames {
		t.Run(name, func(t *testing.T) {
			tok := loadVocab(t, name)
			inp, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "vocab", "ggml-vocab-"+name+".gguf.inp"))
			if err != nil {
				t.Fatal(err)
			}
			texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
			longest := ""
			for _, td := range tok.tokens {
				if len(td.text) > len(longest) {
					longest = td.text
				}
			}
			texts = append(texts, strings.Repeat(longest, 50), strings.Repeat(" ", 1000), strings.Repeat("\n\t ", 300))
			// The stripping tokens, and a few others.
			specials := slices.Clone(tok.special)
			slices.SortStableFunc(specials, func(a, b int32) int {
				return cmp.Compare(tok.tokens[b].attr&(attrLStrip|attrRStrip), tok.tokens[a].attr&(attrLStrip|attrRStrip))
			})
			for _, id := range specials[:min(len(specials), 8)] {
				ws := strings.Repeat(" ", 500)
				texts = append(texts, ws+tok.tokens[id].text+ws, strings.Repeat(tok.tokens[id].text+ws, 5))
			}
			bounded := 0
			for _, text := range texts {
				for _, special := range []bool{false, true} {
					n := len(tok.Encode(text, EncodeOptions{ParseSpecial: special}))
					if lo := tok.MinTokens(text); lo > n {
						t.Fatalf("MinTokens %d > %d tokens (parse special %v) for %q", lo, n, special, text)
					} else if lo > 0 {
						bounded++
					}
				}
			}
			if tok.kind == KindWPM {
				if tok.bytesPerToken != 0 {
					t.Fatalf("WordPiece has a bound of %d bytes per token; it drops whitespace, so it has none", tok.bytesPerToken)
				}
				return
			}
			if bounded == 0 {
				t.Fatalf("MinTokens gave no bound for any of %d texts", len(texts))
			}
		})
	}
}

// TestMinTokensRefusesEarly: a text of more than window × bytesPerToken
// bytes is known to exceed the window without tokenizing it.
func TestMinTokensRefusesEarly(t *testing.T) {
	tok := loadVocab(t, "llama-spm")
	tests := []struct {
		name string
		text string
		want int
	}{
		{name: "empty", text: "", want: 0},
		{name: "one_byte", text: "a", want: 1},
		{name: "exactly_one_token_long", text: strings.Repeat("a", tok.bytesPerToken), want: 1},
		{name: "one_byte_more", text: strings.Repeat("a", tok.bytesPerToken+1), want: 2},
		{name: "a_megabyte", text: strings.Repeat("Once upon a time ", 1<<16), want: (17<<16 + tok.bytesPerToken - 1) / tok.bytesPerToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tok.MinTokens(tt.text); got != tt.want {
				t.Fatalf("MinTokens = %d, want %d (%d bytes per token)", got, tt.want, tok.bytesPerToken)
			}
		})
	}
}
