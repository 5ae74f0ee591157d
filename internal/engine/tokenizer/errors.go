package tokenizer

import (
	"errors"
	"fmt"
)

// ErrInvalidVocab marks vocabulary metadata that cannot describe a tokenizer
// (missing tokens, mismatched array lengths, duplicate tokens, ...).
var ErrInvalidVocab = errors.New("tokenizer: invalid vocabulary")

// UnsupportedError reports a tokenizer model or pre-tokenizer name that this
// package does not implement. It is never papered over with a fallback.
type UnsupportedError struct {
	Key   string // metadata key, e.g. "tokenizer.ggml.pre"
	Value string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("tokenizer: unsupported %s %q", e.Key, e.Value)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidVocab}, args...)...)
}
