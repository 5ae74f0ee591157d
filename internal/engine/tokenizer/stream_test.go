package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// streamDecode pushes ids one at a time and checks that no chunk boundary
// falls inside a UTF-8 sequence of the final text.
func streamDecode(t *testing.T, tok *Tokenizer, ids []int32) string {
	t.Helper()
	d := NewStreamDecoder(tok)
	var sb strings.Builder
	var cuts []int
	for _, id := range ids {
		sb.WriteString(d.Push(id))
		cuts = append(cuts, sb.Len())
	}
	sb.WriteString(d.Flush())
	s := sb.String()
	for _, c := range cuts {
		if c < len(s) && !utf8.RuneStart(s[c]) && utf8.Valid([]byte(s)) {
			t.Fatalf("chunk boundary at byte %d splits a character of %q", c, s)
		}
	}
	return s
}

// TestStreamMatchesDecode is the property: for random token sequences of
// every vocabulary, streaming detokenization equals whole-sequence Decode.
func TestStreamMatchesDecode(t *testing.T) {
	for _, name := range vocabNames {
		t.Run(name, func(t *testing.T) {
			tok := loadVocab(t, name)
			rng := rand.New(rand.NewPCG(1, uint64(len(name))))
			// Bias towards the tokens that make streaming hard: bytes,
			// spaces, apostrophes, punctuation, specials.
			var hard []int32
			for id := range tok.tokens {
				p := tok.pieces[id]
				if tok.tokens[id].attr&(attrByte|attrControl) != 0 || strings.ContainsAny(p, " '?!.,") ||
					(len(p) > 0 && !utf8.ValidString(p)) {
					hard = append(hard, int32(id))
				}
			}
			for iter := range 400 {
				n := 1 + rng.IntN(24)
				ids := make([]int32, n)
				for i := range ids {
					if len(hard) > 0 && rng.IntN(3) > 0 {
						ids[i] = hard[rng.IntN(len(hard))]
					} else {
						ids[i] = int32(rng.IntN(tok.VocabSize()))
					}
				}
				if got, want := streamDecode(t, tok, ids), tok.Decode(ids); got != want {
					t.Fatalf("iteration %d ids %v:\nstream %q\ndecode %q", iter, ids, got, want)
				}
			}
		})
	}
}

// TestStreamRoundTrip streams the encodings of the reference texts.
func TestStreamRoundTrip(t *testing.T) {
	texts := []string{
		"Hello world", " Hello world", "don't can't won't it's I'm you're we'll",
		"hello , world . how ' s it ?", "🦙🚀 emoji test 😀👍🏽", "你好，世界", "  leading and trailing  ",
		"a ' b 're 've 's", "\ttab\n\nnewline",
	}
	for _, name := range vocabNames {
		t.Run(name, func(t *testing.T) {
			tok := loadVocab(t, name)
			for _, s := range texts {
				ids := tok.Encode(s, EncodeOptions{})
				if got, want := streamDecode(t, tok, ids), tok.Decode(ids); got != want {
					t.Errorf("%q: stream %q, decode %q", s, got, want)
				}
			}
		})
	}
}

func TestUTF8Cut(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"ascii", "abc", 3},
		{"complete", "é", 2},
		{"lead only", "a\xE4", 1},
		{"two of three", "a\xE4\xBD", 1},
		{"four byte partial", "\xF0\x9F\x98", 0},
		{"stray continuation", "a\x80", 2},
		{"invalid lead", "a\xFF", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := utf8Cut([]byte(tt.in)); got != tt.want {
				t.Errorf("utf8Cut(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}
