package gguf

import (
	"errors"
	"fmt"
)

// ParseHeader parses the metadata and tensor infos at the start of a GGUF
// file without needing its tensor data, so a model can be described from
// the first bytes of a remote file (read with an HTTP Range request).
//
// prefix may end anywhere after the tensor infos: the data section is not
// read and tensor offsets are checked only for alignment and overlap (two
// tensors sharing bytes fail with ErrOverlap, as in Parse). When prefix ends
// before the tensor infos do, the error satisfies errors.Is(err,
// ErrTruncated) and the caller should retry with a longer prefix. A count or
// length larger than the bytes that remain means the same thing in a prefix
// (ErrTooLarge in Parse), so it too is reported as ErrTruncated; a caller
// bounds its retries by the size it is prepared to read.
//
// The returned File has no tensor data: TensorData must not be called on it.
// DataOffset is where the data section starts in the whole file.
func ParseHeader(prefix []byte) (*File, error) {
	f, err := parse(prefix, false)
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) && errors.Is(fe.Err, ErrTooLarge) {
			return nil, &FormatError{Field: fe.Field, Offset: fe.Offset, Err: fmt.Errorf("%w: the %d-byte prefix ends first (%v)", ErrTruncated, len(prefix), fe.Err)}
		}
		return nil, err
	}
	return f, nil
}
