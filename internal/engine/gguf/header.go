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
// read and tensor offsets are checked only for alignment. When prefix ends
// before the tensor infos do, the error satisfies errors.Is(err,
// ErrTruncated) and the caller should retry with a longer prefix. A count or
// length larger than the bytes that remain means the same thing in a prefix
// (ErrTooLarge in Parse), so it too is reported as ErrTruncated; a caller
// bounds its retries by the size it is prepared to read.
//
// The returned File has no tensor data: TensorData must not be called on it.
// DataOffset is where the data section starts in the whole file.
func ParseHeader(prefix []byte) (*File, error) {
	f, err := parseHeader(prefix)
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) && errors.Is(fe.Err, ErrTooLarge) {
			return nil, &FormatError{Field: fe.Field, Offset: fe.Offset, Err: fmt.Errorf("%w: the %d-byte prefix ends first (%v)", ErrTruncated, len(prefix), fe.Err)}
		}
		return nil, err
	}
	return f, nil
}

func parseHeader(b []byte) (*File, error) {
	d := &decoder{b: b}
	m, err := d.u32("magic")
	if err != nil {
		return nil, err
	}
	if m != magic {
		return nil, &FormatError{Field: "magic", Offset: 0, Err: ErrNotGGUF}
	}
	f := &File{kv: map[string]int{}, tensors: map[string]int{}}
	if f.Version, err = d.u32("version"); err != nil {
		return nil, err
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, &FormatError{Field: "version", Offset: 4, Err: fmt.Errorf("%w %d (this reader handles versions 2 and 3)", ErrVersion, f.Version)}
	}
	nTensors, err := d.count("tensor_count", 24)
	if err != nil {
		return nil, err
	}
	nKV, err := d.count("kv_count", 13)
	if err != nil {
		return nil, err
	}
	f.KVs = make([]KV, 0, nKV)
	for i := 0; i < nKV; i++ {
		kv, err := readKV(d, i)
		if err != nil {
			return nil, err
		}
		if _, dup := f.kv[kv.Key]; dup {
			return nil, d.fail(fmt.Sprintf("kv[%d].key", i), fmt.Errorf("%w: metadata key %q appears twice", ErrDuplicate, kv.Key))
		}
		f.kv[kv.Key] = len(f.KVs)
		f.KVs = append(f.KVs, kv)
	}
	f.Alignment = DefaultAlignment
	if v, ok := f.Get("general.alignment"); ok {
		a, isInt := asInt64(v.V)
		if !isInt || a <= 0 || a > 1<<30 || a&(a-1) != 0 {
			return nil, &FormatError{Field: "general.alignment", Offset: d.off, Err: fmt.Errorf("%w: alignment %v must be a power of two", ErrInvalid, v.V)}
		}
		f.Alignment = uint64(a)
	}
	f.Tensors = make([]TensorInfo, 0, nTensors)
	for i := 0; i < nTensors; i++ {
		ti, err := readTensorInfo(d, i)
		if err != nil {
			return nil, err
		}
		if _, dup := f.tensors[ti.Name]; dup {
			return nil, d.fail(fmt.Sprintf("tensor[%d].name", i), fmt.Errorf("%w: tensor %q appears twice", ErrDuplicate, ti.Name))
		}
		if ti.Offset%f.Alignment != 0 {
			return nil, d.fail(fmt.Sprintf("tensor[%q].offset", ti.Name), fmt.Errorf("%w: offset %d is not a multiple of the alignment %d", ErrInvalid, ti.Offset, f.Alignment))
		}
		f.tensors[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}
	f.DataOffset = int64((uint64(d.off) + f.Alignment - 1) / f.Alignment * f.Alignment)
	return f, nil
}
