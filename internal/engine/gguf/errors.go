package gguf

import (
	"errors"
	"fmt"
)

// Error kinds a caller can test with errors.Is.
var (
	ErrNotGGUF     = errors.New("not a GGUF file (bad magic)")
	ErrVersion     = errors.New("unsupported GGUF version")
	ErrTruncated   = errors.New("file is truncated")
	ErrTooLarge    = errors.New("value exceeds the bytes that remain in the file")
	ErrInvalid     = errors.New("invalid value")
	ErrNoTensor    = errors.New("no such tensor")
	ErrDuplicate   = errors.New("duplicate name")
	ErrUnsupported = errors.New("unsupported tensor type")
)

// FormatError reports a malformed file: the field being read, where, and why.
type FormatError struct {
	Field  string // e.g. "tensor_count", "kv[3].key", "tensor[\"output.weight\"].offset"
	Offset int64  // byte offset of the field in the file
	Err    error  // one of the Err* kinds, possibly wrapped with detail
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf: %s at byte %d: %v", e.Field, e.Offset, e.Err)
}

func (e *FormatError) Unwrap() error { return e.Err }
