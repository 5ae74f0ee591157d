package tokenizer

import (
	"errors"
	"slices"
	"testing"
)

func preSplitStrings(t *testing.T, pre, text string) []string {
	t.Helper()
	p, err := lookupPre(pre)
	if err != nil {
		t.Fatal(err)
	}
	var c splitCtx
	words, _ := p.preSplit(&c, text, nil, nil)
	var out []string
	for _, w := range words {
		out = append(out, string(c.rs[w.start:w.end]))
	}
	return out
}

func TestPreSplit(t *testing.T) {
	tests := []struct {
		name, pre, text string
		want            []string
	}{
		{"gpt2 basics", "gpt-2", "Hello world's 123  x", []string{"Hello", " world", "'s", " 123", " ", " x"}},
		{"gpt2 trailing spaces", "gpt-2", "a  ", []string{"a", "  "}},
		{"llama3 digits and newlines", "llama-bpe", "Hello 12345 world\n\n", []string{"Hello", " ", "123", "45", " world", "\n\n"}},
		{"llama3 case-insensitive contraction", "llama-bpe", "I'M", []string{"I", "'M"}},
		{"qwen2 single digits", "qwen2", "x 2024", []string{"x", " ", "2", "0", "2", "4"}},
		{"deepseek-coder", "deepseek-coder", "Hello, 世界 42\n", []string{"Hello", ",", " ", "世界", " ", "4", "2", "\n"}},
		{"starcoder digits", "starcoder", "ab 12", []string{"ab", " ", "1", "2"}},
		{"default punctuation first", "default", "a+b=12345", []string{"a", "+", "b", "=", "123", "45"}},
		{"falcon backtick", "falcon", "x`y", []string{"x", "`", "y"}},
		{"tekken case runs", "tekken", "HELLOWorld ÉAB", []string{"HELLOWorld", " É", "AB"}},
		{"tekken slash tail", "tekken", "a ::/\nb", []string{"a", " ::/\n", "b"}},
		{"gpt-4o contractions any case", "gpt-4o", "I'M DON'T they're We'Ll", []string{"I'M", " DON'T", " they're", " We'Ll"}},
		{"gpt-4o contraction only after letters", "gpt-4o", "'s 's x'z", []string{"'s", " '", "s", " x", "'z"}},
		{"gpt-4o digits in threes", "gpt-4o", "1234567 x42", []string{"123", "456", "7", " x", "42"}},
		{"gpt-4o case runs", "gpt-4o", "HELLOWorld ÉAB", []string{"HELLOWorld", " É", "AB"}},
		{"gpt-4o newlines and slash tail", "gpt-4o", "a ::/\n\r\n  b", []string{"a", " ::/\n\r\n", " ", " b"}},
		{"llama4 is gpt-4o", "llama4", "Y'ALL I'LL 2024", []string{"Y", "'ALL", " I'LL", " ", "202", "4"}},
		{"deepseek-v3", "deepseek-v3", "12345 .Net 日本語", []string{"123", "45", " .", "Net", " ", "日本語"}},
		{"deepseek-llm", "deepseek-llm", "Hi, 你好 7  ", []string{"Hi", ",", " ", "你好", " ", "7", "  "}},
		{"kimi-k2 Han runs apart from kana and Latin", "kimi-k2", "日本語テキスト abc中文def", []string{"日本語", "テキスト", " abc", "中文", "def"}},
		{"kimi-k2 contraction after any word", "kimi-k2", "DON'T I'm 's 中's", []string{"DON'T", " I'm", " '", "s", " ", "中", "'s"}},
		{"kimi-k2 no case split, marks break words", "kimi-k2", "HELLOWorld e\u0301x", []string{"HELLOWorld", " e", "\u0301x"}},
		{"kimi-k2 digits and punctuation tails", "kimi-k2", "1234567 ::\n\nx", []string{"123", "456", "7", " ::\n\n", "x"}},
		{"kimi-k2 Han blocks are llama.cpp's list", "kimi-k2", "a𠀁b a𰀀b", []string{"a", "𠀁", "b", " a𰀀b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := preSplitStrings(t, tt.pre, tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("split %q with %s:\n got %q\nwant %q", tt.text, tt.pre, got, tt.want)
			}
		})
	}
}

func TestRequiredPreTokenizers(t *testing.T) {
	for _, name := range []string{"default", "llama-bpe", "qwen2", "gpt-2", "smollm", "deepseek-llm", "deepseek-coder",
		"deepseek-v3", "phi-2", "starcoder", "falcon", "refact", "tekken", "gpt-4o", "llama4", "kimi-k2"} {
		if _, err := lookupPre(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// tinyBPE is a hand-built byte-level vocabulary: the printable ASCII bytes
// plus the merges needed for "hello".
func tinyBPE(pre string) Vocab {
	var toks []string
	for b := 0; b < 256; b++ {
		toks = append(toks, string(byteToRune[b]))
	}
	toks = append(toks, "he", "ll", "hell", "hello", "<|endoftext|>")
	types := make([]int32, len(toks))
	for i := range types {
		types[i] = TypeNormal
	}
	types[len(types)-1] = TypeControl
	return Vocab{Model: "gpt2", Pre: pre, Tokens: toks, Types: types,
		Merges: []string{"h e", "l l", "he ll", "hell o"}, EOS: ptr(int32(len(toks) - 1)), BOS: ptr(int32(len(toks) - 1))}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name        string
		v           Vocab
		unsupported bool
	}{
		{"unknown model", Vocab{Model: "rwkv", Tokens: []string{"a"}}, true},
		{"unknown pre", tinyBPE("not-a-pretokenizer"), true},
		{"no tokens", Vocab{Model: "llama"}, false},
		{"duplicate token", Vocab{Model: "llama", Tokens: []string{"a", "a"}}, false},
		{"short scores", Vocab{Model: "llama", Tokens: []string{"a", "b"}, Scores: []float32{1}}, false},
		{"short types", Vocab{Model: "llama", Tokens: []string{"a", "b"}, Types: []int32{1}}, false},
		{"bpe without merges", Vocab{Model: "gpt2", Tokens: []string{"a"}}, false},
		{"add_bos without bos", Vocab{Model: "gpt2", Tokens: []string{"a"}, Merges: []string{}, AddBOS: ptr(true)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.v)
			if err == nil {
				t.Fatal("New succeeded")
			}
			var ue *UnsupportedError
			if got := errors.As(err, &ue); got != tt.unsupported {
				t.Errorf("UnsupportedError = %v, want %v (err %v)", got, tt.unsupported, err)
			}
			if !tt.unsupported && !errors.Is(err, ErrInvalidVocab) {
				t.Errorf("err %v is not ErrInvalidVocab", err)
			}
		})
	}
}

func TestTinyBPE(t *testing.T) {
	tok, err := New(tinyBPE("gpt-2"))
	if err != nil {
		t.Fatal(err)
	}
	eot := int32(tok.VocabSize() - 1)
	hello := eot - 1
	tests := []struct {
		name string
		text string
		opt  EncodeOptions
		want []int32
	}{
		{"merges", "hello", EncodeOptions{}, []int32{hello}},
		{"special as text", "<|endoftext|>", EncodeOptions{}, nil},
		{"special parsed", "hello<|endoftext|>", EncodeOptions{ParseSpecial: true}, []int32{hello, eot}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tok.Encode(tt.text, tt.opt)
			if tt.want == nil {
				if slices.Contains(got, eot) || tok.Decode(got) != tt.text {
					t.Errorf("Encode(%q) = %v (decodes to %q)", tt.text, got, tok.Decode(got))
				}
				return
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Encode(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
	if !tok.IsEOG(eot) || tok.IsEOG(hello) {
		t.Errorf("IsEOG: eot %v hello %v", tok.IsEOG(eot), tok.IsEOG(hello))
	}
}

func TestEOG(t *testing.T) {
	tests := []struct {
		vocab string
		eog   []string
	}{
		{"llama-bpe", []string{"<|end_of_text|>", "<|eot_id|>"}},
		{"qwen2", []string{"<|endoftext|>", "<|im_end|>"}},
		{"llama-spm", []string{"</s>"}},
		{"phi-3", []string{"</s>", "<|endoftext|>", "<|end|>"}},
	}
	for _, tt := range tests {
		t.Run(tt.vocab, func(t *testing.T) {
			tok := loadVocab(t, tt.vocab)
			for _, s := range tt.eog {
				id, ok := tok.ids[s]
				if !ok {
					t.Fatalf("%q not in vocabulary", s)
				}
				if !tok.IsEOG(id) {
					t.Errorf("%q (%d) is not EOG; EOG set %v", s, id, tok.EOG())
				}
			}
			if id := tok.ids["<|begin_of_text|>"]; tt.vocab == "llama-bpe" && tok.IsEOG(id) {
				t.Errorf("<|begin_of_text|> is EOG")
			}
		})
	}
}

func TestKinds(t *testing.T) {
	tests := []struct {
		vocab  string
		kind   Kind
		addBOS bool
	}{
		{"llama-spm", KindSPM, true}, {"llama-bpe", KindBPE, true}, {"gpt-2", KindBPE, false}, {"bert-bge", KindWPM, true},
	}
	for _, tt := range tests {
		t.Run(tt.vocab, func(t *testing.T) {
			tok := loadVocab(t, tt.vocab)
			if tok.Kind() != tt.kind || tok.AddBOS() != tt.addBOS {
				t.Errorf("Kind %v AddBOS %v, want %v %v", tok.Kind(), tok.AddBOS(), tt.kind, tt.addBOS)
			}
		})
	}
}
