package encoder

import (
	"errors"
	"fmt"
)

// ErrInvalidModel marks a bert GGUF whose metadata or tensors cannot describe
// an encoder (a missing tensor, a shape that disagrees with the metadata).
var ErrInvalidModel = errors.New("encoder: invalid model")

// UnsupportedError reports a model this package does not run: another
// architecture, or a pooling type it does not implement.
type UnsupportedError struct {
	What      string // "architecture", "pooling type", "head_count_kv"
	Value     string
	Supported string // what would have been accepted
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("encoder: unsupported %s %s (supported: %s)", e.What, e.Value, e.Supported)
}

// InputError reports token ids Embed cannot run.
type InputError struct {
	Reason string
}

func (e *InputError) Error() string { return "encoder: " + e.Reason }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidModel}, args...)...)
}
