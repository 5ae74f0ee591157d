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
	ErrOverlap     = errors.New("tensors overlap")
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

// TensorOverlapError reports two tensors whose data byte ranges share bytes
// (the same offset is the extreme case: one tensor aliases the other). A
// writer lays tensors out one after another, so such a file is corrupt or
// crafted; reading it would serve one tensor's bytes as another's weights.
// It unwraps to ErrOverlap.
type TensorOverlapError struct {
	A, B         string // tensor names; A starts first (or at the same offset and comes first in the file)
	AStart, AEnd uint64 // A's bytes [AStart, AEnd), relative to the data section
	BStart, BEnd uint64
}

func (e *TensorOverlapError) Error() string {
	return fmt.Sprintf("%v: tensor %q (bytes [%d, %d) of the data section) and tensor %q (bytes [%d, %d)) share bytes; the file is corrupt or crafted: re-download or re-convert it",
		ErrOverlap, e.A, e.AStart, e.AEnd, e.B, e.BStart, e.BEnd)
}

func (e *TensorOverlapError) Unwrap() error { return ErrOverlap }
