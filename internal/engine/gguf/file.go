package gguf

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// File is a parsed GGUF file. Its tensor data aliases the underlying bytes
// (a read-only memory mapping when opened with Open), so slices returned by
// TensorData are valid until Close.
type File struct {
	Version    uint32
	KVs        []KV // in file order
	Tensors    []TensorInfo
	Alignment  uint64
	DataOffset int64 // start of the tensor data section in the file

	kv      map[string]int
	tensors map[string]int
	data    []byte // the tensor data section
	closer  io.Closer
}

// Parse parses a whole GGUF file held in memory. The File aliases b.
func Parse(b []byte) (*File, error) { return parse(b, true) }

// parse reads the header (metadata and tensor infos) of the GGUF file in b.
// whole says b is the whole file, whose data section must hold every
// tensor; otherwise b is a prefix (ParseHeader), the data section is not
// read, and each tensor offset is checked for alignment as its info is read,
// before a later info can run past the end of the prefix.
func parse(b []byte, whole bool) (*File, error) {
	d := newDecoder(b)
	m, err := d.u32("magic")
	if err != nil {
		return nil, err
	}
	if m != magic {
		return nil, &FormatError{Field: "magic", Offset: 0, Err: ErrNotGGUF}
	}
	f := &File{}
	if f.Version, err = d.u32("version"); err != nil {
		return nil, err
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, &FormatError{Field: "version", Offset: 4, Err: fmt.Errorf("%w %d (this reader handles versions 2 and 3)", ErrVersion, f.Version)}
	}
	// A tensor info is at least 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset) bytes.
	nTensors, err := d.count("tensor_count", 24, MaxTensors)
	if err != nil {
		return nil, err
	}
	// A KV is at least 8 (key length) + 4 (type) + 1 byte of value.
	nKV, err := d.count("kv_count", 13, MaxKVs)
	if err != nil {
		return nil, err
	}
	if err := d.charge("kv_count", int64(nKV)*costKV); err != nil {
		return nil, err
	}
	f.KVs = make([]KV, 0, nKV)
	f.kv = make(map[string]int, nKV)
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
	if err := d.charge("tensor_count", int64(nTensors)*(costTensor+costOverlap)); err != nil {
		return nil, err
	}
	f.Tensors = make([]TensorInfo, 0, nTensors)
	f.tensors = make(map[string]int, nTensors)
	var total uint64 // bytes of all tensors, bounded by MaxDataBytes
	for i := 0; i < nTensors; i++ {
		ti, err := readTensorInfo(d, i)
		if err != nil {
			return nil, err
		}
		if _, dup := f.tensors[ti.Name]; dup {
			return nil, d.fail(fmt.Sprintf("tensor[%d].name", i), fmt.Errorf("%w: tensor %q appears twice", ErrDuplicate, ti.Name))
		}
		if !whole && ti.Offset%f.Alignment != 0 {
			return nil, d.fail(fmt.Sprintf("tensor[%q].offset", ti.Name), fmt.Errorf("%w: offset %d is not a multiple of the alignment %d", ErrInvalid, ti.Offset, f.Alignment))
		}
		if total += uint64(ti.Size); total > MaxDataBytes {
			return nil, d.fail(fmt.Sprintf("tensor[%q].dims", ti.Name), &LimitError{Limit: "total tensor bytes", Value: int64(total), Max: MaxDataBytes})
		}
		f.tensors[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}
	// The data section starts at the next multiple of the alignment.
	start := (uint64(d.off) + f.Alignment - 1) / f.Alignment * f.Alignment
	if !whole {
		f.DataOffset = int64(start)
		if err := overlapError(f); err != nil {
			return nil, err
		}
		return f, nil
	}
	if nTensors == 0 {
		// Vocabulary-only files may end right after the metadata.
		if start > uint64(len(b)) {
			start = uint64(len(b))
		}
	} else if start > uint64(len(b)) {
		return nil, &FormatError{Field: "data_section", Offset: d.off, Err: fmt.Errorf("%w: tensor data would start at byte %d of a %d-byte file", ErrTruncated, start, len(b))}
	}
	f.DataOffset = int64(start)
	f.data = b[start:]
	for _, t := range f.Tensors {
		if t.Offset%f.Alignment != 0 {
			return nil, &FormatError{Field: fmt.Sprintf("tensor[%q].offset", t.Name), Offset: f.DataOffset, Err: fmt.Errorf("%w: offset %d is not a multiple of the alignment %d", ErrInvalid, t.Offset, f.Alignment)}
		}
		if t.Offset > uint64(len(f.data)) || uint64(t.Size) > uint64(len(f.data))-t.Offset {
			return nil, &FormatError{Field: fmt.Sprintf("tensor[%q].offset", t.Name), Offset: f.DataOffset, Err: fmt.Errorf("%w: tensor %q needs bytes [%d, %d) of a %d-byte data section", ErrTruncated, t.Name, t.Offset, satAdd(t.Offset, uint64(t.Size)), len(f.data))}
		}
	}
	if err := overlapError(f); err != nil {
		return nil, err
	}
	return f, nil
}

// overlapError refuses a file in which two tensors share data bytes, as a
// *FormatError wrapping a *TensorOverlapError.
func overlapError(f *File) error {
	a, b, ok := firstOverlap(f.Tensors)
	if !ok {
		return nil
	}
	ta, tb := f.Tensors[a], f.Tensors[b]
	return &FormatError{Field: fmt.Sprintf("tensor[%q].offset", tb.Name), Offset: f.DataOffset, Err: &TensorOverlapError{
		A: ta.Name, AStart: ta.Offset, AEnd: satAdd(ta.Offset, uint64(ta.Size)),
		B: tb.Name, BStart: tb.Offset, BEnd: satAdd(tb.Offset, uint64(tb.Size)),
	}}
}

// firstOverlap finds two tensors whose ranges [Offset, Offset+Size) share a
// byte, in O(n log n): sorted by start, a range overlaps an earlier one iff
// it starts before the furthest end seen so far. An empty range holds no
// byte and overlaps nothing (the reader never yields one: every dimension is
// at least 1). The sort is stable, so of two tensors at one offset a is the
// one earlier in the file.
func firstOverlap(ts []TensorInfo) (a, b int, ok bool) {
	idx := make([]int, 0, len(ts))
	for i, t := range ts {
		if t.Size > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(ts[x].Offset, ts[y].Offset) })
	reach, end := -1, uint64(0) // the tensor that ends furthest so far, and where
	for _, i := range idx {
		if reach >= 0 && ts[i].Offset < end {
			return reach, i, true
		}
		if e := satAdd(ts[i].Offset, uint64(ts[i].Size)); reach < 0 || e > end {
			reach, end = i, e
		}
	}
	return 0, 0, false
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

func readKV(d *decoder, i int) (KV, error) {
	at := d.off
	n, err := d.u64(".key.length")
	if err != nil {
		return KV{}, prefix(err, fmt.Sprintf("kv[%d]", i))
	}
	if n == 0 || n > MaxKeyLen {
		return KV{}, &FormatError{Field: fmt.Sprintf("kv[%d].key", i), Offset: at, Err: fmt.Errorf("%w: key length %d", ErrInvalid, n)}
	}
	d.off = at
	key, err := d.str(".key")
	if err != nil {
		return KV{}, prefix(err, fmt.Sprintf("kv[%d]", i))
	}
	t, err := d.u32(".type")
	if err != nil {
		return KV{}, prefix(err, "kv["+quoteName(key)+"]")
	}
	v, err := d.value("", ValueType(t), 0)
	if err != nil {
		return KV{}, prefix(err, "kv["+quoteName(key)+"]")
	}
	return KV{Key: key, Value: Value{Type: ValueType(t), V: v}}, nil
}

func readTensorInfo(d *decoder, i int) (TensorInfo, error) {
	name, err := d.str(".name")
	if err != nil {
		return TensorInfo{}, prefix(err, fmt.Sprintf("tensor[%d]", i))
	}
	if name == "" || len(name) > MaxKeyLen {
		return TensorInfo{}, d.fail(fmt.Sprintf("tensor[%d].name", i), fmt.Errorf("%w: tensor name of length %d", ErrInvalid, len(name)))
	}
	ti, err := readTensorShape(d, name)
	if err != nil {
		return TensorInfo{}, prefix(err, "tensor["+quoteName(name)+"]")
	}
	return ti, nil
}

// readTensorShape reads the rest of a tensor info after its name; fields
// are named relative to the tensor.
func readTensorShape(d *decoder, name string) (TensorInfo, error) {
	at := d.off
	nd, err := d.u32(".n_dims")
	if err != nil {
		return TensorInfo{}, err
	}
	if nd == 0 || nd > MaxDims {
		return TensorInfo{}, &FormatError{Field: ".n_dims", Offset: at, Err: fmt.Errorf("%w: %d dimensions (1 to %d allowed)", ErrInvalid, nd, MaxDims)}
	}
	ti := TensorInfo{Name: name, Dims: make([]uint64, nd)}
	elems := uint64(1)
	for j := range ti.Dims {
		at := d.off
		if ti.Dims[j], err = d.u64(""); err != nil {
			return TensorInfo{}, prefix(err, fmt.Sprintf(".dims[%d]", j))
		}
		if ti.Dims[j] == 0 || ti.Dims[j] > math.MaxInt64/elems {
			return TensorInfo{}, &FormatError{Field: fmt.Sprintf(".dims[%d]", j), Offset: at, Err: fmt.Errorf("%w: dimension %d", ErrInvalid, ti.Dims[j])}
		}
		elems *= ti.Dims[j]
	}
	at = d.off
	t, err := d.u32(".type")
	if err != nil {
		return TensorInfo{}, err
	}
	ti.Type = tensor.Type(t)
	if !ti.Type.Known() {
		return TensorInfo{}, &FormatError{Field: ".type", Offset: at, Err: fmt.Errorf("%w: unknown tensor type id %d", ErrInvalid, t)}
	}
	if ti.Dims[0]%uint64(ti.Type.BlockElems()) != 0 {
		return TensorInfo{}, &FormatError{Field: ".dims[0]", Offset: at, Err: fmt.Errorf("%w: row length %d is not a multiple of the %s block size %d", ErrInvalid, ti.Dims[0], ti.Type, ti.Type.BlockElems())}
	}
	if ti.Size, err = tensor.RowBytes(ti.Type, int64(elems)); err != nil {
		return TensorInfo{}, &FormatError{Field: ".dims", Offset: at, Err: fmt.Errorf("%w: %v", ErrInvalid, err)}
	}
	if ti.Size > MaxDataBytes {
		return TensorInfo{}, &FormatError{Field: ".dims", Offset: at, Err: &LimitError{Limit: "tensor bytes", Value: ti.Size, Max: MaxDataBytes}}
	}
	if ti.Offset, err = d.u64(".offset"); err != nil {
		return TensorInfo{}, err
	}
	return ti, nil
}

// Close releases the memory mapping, if any. Slices from TensorData become invalid.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c.Close()
}

// pageDropper is a mapping that can hand whole pages of a range back to
// the OS.
type pageDropper interface{ drop(b []byte) }

// Drop tells the OS the process is done reading b, a range of a tensor's
// data from TensorData that the caller has copied elsewhere (packed
// weights): on a memory-mapped file the range's whole pages leave the
// process's resident memory; the page cache keeps them while it has room,
// and a later read would fault them back in. Elsewhere it does nothing.
func (f *File) Drop(b []byte) {
	if d, ok := f.closer.(pageDropper); ok {
		d.drop(b)
	}
}

// Get returns the metadata value for key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kv[key]
	if !ok {
		return Value{}, false
	}
	return f.KVs[i].Value, true
}

// Tensor returns the info of the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// TensorData returns the bytes of the named tensor, aliasing the file.
func (f *File) TensorData(name string) ([]byte, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("gguf: tensor %q: %w", name, ErrNoTensor)
	}
	return f.data[t.Offset : t.Offset+uint64(t.Size) : t.Offset+uint64(t.Size)], nil
}

// quoteName quotes a key or tensor name for an error's field, cut to 64
// bytes: a crafted 64 KiB key would otherwise make every message about it
// a quarter of a megabyte.
func quoteName(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}
