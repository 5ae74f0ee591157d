package tokenizer

import (
	"fmt"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// VocabFromGGUF reads the tokenizer metadata of a GGUF file.
func VocabFromGGUF(f *gguf.File) (Vocab, error) {
	var v Vocab
	var ok bool
	if v.Model, ok = f.String("tokenizer.ggml.model"); !ok {
		return v, invalidf("missing tokenizer.ggml.model")
	}
	v.Pre, _ = f.String("tokenizer.ggml.pre")
	v.Name, _ = f.String("general.name")
	if v.Tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok {
		return v, invalidf("missing or mistyped tokenizer.ggml.tokens")
	}
	if _, present := f.Get("tokenizer.ggml.scores"); present {
		if v.Scores, ok = f.Float32s("tokenizer.ggml.scores"); !ok {
			is, ok := f.Int32s("tokenizer.ggml.scores")
			if !ok {
				return v, invalidf("mistyped tokenizer.ggml.scores")
			}
			v.Scores = make([]float32, len(is))
			for i, s := range is {
				v.Scores[i] = float32(s)
			}
		}
	}
	if _, present := f.Get("tokenizer.ggml.token_type"); present {
		if v.Types, ok = f.Int32s("tokenizer.ggml.token_type"); !ok {
			return v, invalidf("mistyped tokenizer.ggml.token_type")
		}
	}
	if _, present := f.Get("tokenizer.ggml.merges"); present {
		if v.Merges, ok = f.Strings("tokenizer.ggml.merges"); !ok {
			return v, invalidf("mistyped tokenizer.ggml.merges")
		}
	}
	for _, s := range []struct {
		key string
		dst **int32
	}{
		{"tokenizer.ggml.bos_token_id", &v.BOS},
		{"tokenizer.ggml.eos_token_id", &v.EOS},
		{"tokenizer.ggml.eot_token_id", &v.EOT},
		{"tokenizer.ggml.eom_token_id", &v.EOM},
		{"tokenizer.ggml.unknown_token_id", &v.UNK},
		{"tokenizer.ggml.seperator_token_id", &v.SEP},
		{"tokenizer.ggml.padding_token_id", &v.PAD},
		{"tokenizer.ggml.mask_token_id", &v.Mask},
	} {
		if u, ok := f.Uint(s.key); ok {
			if u > 1<<31-1 {
				u = 1<<31 - 1 // out of any vocabulary; New ignores it
			}
			id := int32(u)
			*s.dst = &id
		}
	}
	for _, s := range []struct {
		key string
		dst **bool
	}{
		{"tokenizer.ggml.add_bos_token", &v.AddBOS},
		{"tokenizer.ggml.add_eos_token", &v.AddEOS},
		{"tokenizer.ggml.add_space_prefix", &v.AddSpacePrefix},
		{"tokenizer.ggml.normalizer.lowercase", &v.Lowercase},
		{"tokenizer.ggml.normalizer.strip_accents", &v.StripAccents},
	} {
		if b, ok := f.Bool(s.key); ok {
			*s.dst = &b
		}
	}
	return v, nil
}

// FromGGUF builds the tokenizer described by a GGUF file's metadata.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	v, err := VocabFromGGUF(f)
	if err != nil {
		return nil, err
	}
	t, err := New(v)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %q: %w", v.Model, err)
	}
	return t, nil
}
