package tokenizer

import "slices"

// Kind reports the tokenization algorithm.
func (t *Tokenizer) Kind() Kind { return t.kind }

// Pre reports the pre-tokenizer name (tokenizer.ggml.pre).
func (t *Tokenizer) Pre() string { return t.pre }

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS is the beginning-of-sequence token ([CLS] for WordPiece), or -1.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS is the end-of-sequence token, or -1.
func (t *Tokenizer) EOS() int32 { return t.eos }

// EOT is the end-of-turn token, or -1.
func (t *Tokenizer) EOT() int32 { return t.eot }

// SEP is the separator token ([SEP] for WordPiece), or -1.
func (t *Tokenizer) SEP() int32 { return t.sep }

// AddBOS reports whether Encode with AddSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with AddSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// IsEOG reports whether id ends generation: EOS, EOT, EOM and the
// end-of-turn tokens llama.cpp recognises by their text.
func (t *Tokenizer) IsEOG(id int32) bool {
	_, ok := slices.BinarySearch(t.eog, id)
	return ok
}

// EOG returns the end-of-generation tokens in ascending order.
func (t *Tokenizer) EOG() []int32 { return slices.Clone(t.eog) }

// ControlTokens marks, by token id, the control tokens whose text is one
// of texts (nil when there are none).
func (t *Tokenizer) ControlTokens(texts []string) []bool {
	var marks []bool
	for id := range t.tokens {
		if t.tokens[id].attr&attrControl != 0 && slices.Contains(texts, t.tokens[id].text) {
			if marks == nil {
				marks = make([]bool, len(t.tokens))
			}
			marks[id] = true
		}
	}
	return marks
}

// IsControl reports whether id is a control token.
func (t *Tokenizer) IsControl(id int32) bool {
	return id >= 0 && int(id) < len(t.tokens) && t.tokens[id].attr&attrControl != 0
}
