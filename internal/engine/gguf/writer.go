package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// Writer builds a GGUF v3 file: metadata in insertion order, then tensors in
// insertion order, each aligned. Tests and `skulk dev synth` use it to write
// models with real shapes.
type Writer struct {
	alignment uint64
	kvs       []KV
	keys      map[string]bool
	tensors   []writerTensor
	names     map[string]bool
	err       error
}

type writerTensor struct {
	info TensorInfo
	data []byte
}

// NewWriter returns an empty writer with the default alignment.
func NewWriter() *Writer {
	return &Writer{alignment: DefaultAlignment, keys: map[string]bool{}, names: map[string]bool{}}
}

// Set adds a metadata entry. v may be any scalar Go type GGUF has (uint8 …
// float64, bool, string), a slice of one ([]string, []float32, []int32, …),
// or an Array. general.alignment also sets the writer's alignment. The first
// error is kept and returned by WriteTo.
func (w *Writer) Set(key string, v any) {
	if w.err != nil {
		return
	}
	if w.keys[key] {
		w.err = fmt.Errorf("gguf writer: %w: key %q", ErrDuplicate, key)
		return
	}
	val, err := toValue(v)
	if err != nil {
		w.err = fmt.Errorf("gguf writer: key %q: %w", key, err)
		return
	}
	if key == "general.alignment" {
		a, ok := asInt64(val.V)
		if !ok || a <= 0 || a&(a-1) != 0 {
			w.err = fmt.Errorf("gguf writer: general.alignment %v is not a power of two", v)
			return
		}
		w.alignment = uint64(a)
	}
	w.keys[key] = true
	w.kvs = append(w.kvs, KV{Key: key, Value: val})
}

// AddTensor adds a tensor. dims are in GGML order (dims[0] is the row length)
// and data must be exactly the tensor's byte size.
func (w *Writer) AddTensor(name string, t tensor.Type, dims []uint64, data []byte) {
	if w.err != nil {
		return
	}
	if w.names[name] {
		w.err = fmt.Errorf("gguf writer: %w: tensor %q", ErrDuplicate, name)
		return
	}
	if len(dims) == 0 || len(dims) > MaxDims {
		w.err = fmt.Errorf("gguf writer: tensor %q has %d dimensions", name, len(dims))
		return
	}
	n := int64(1)
	for _, d := range dims {
		n *= int64(d)
	}
	size, err := tensor.RowBytes(t, n)
	if err != nil || dims[0]%uint64(t.BlockElems()) != 0 {
		w.err = fmt.Errorf("gguf writer: tensor %q: %v rows are not whole %s blocks (%v)", name, dims, t, err)
		return
	}
	if int64(len(data)) != size {
		w.err = fmt.Errorf("gguf writer: tensor %q: %d bytes of data, %s %v needs %d", name, len(data), t, dims, size)
		return
	}
	w.names[name] = true
	w.tensors = append(w.tensors, writerTensor{TensorInfo{Name: name, Type: t, Dims: append([]uint64(nil), dims...), Size: size}, data})
}

// WriteFile writes the file atomically (temporary file, then rename).
func (w *Writer) WriteFile(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gguf-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := w.WriteTo(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// WriteTo writes the file.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	cw := &countWriter{w: bufio.NewWriterSize(out, 1<<20)}
	e := encoder{cw}
	e.u32(magic)
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.kvs)))
	for _, kv := range w.kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.Type))
		e.value(kv.Value.V)
	}
	off := uint64(0)
	for i := range w.tensors {
		t := &w.tensors[i].info
		t.Offset = off
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(t.Offset)
		off = alignUp(off+uint64(t.Size), w.alignment)
	}
	e.pad(w.alignment)
	for _, t := range w.tensors {
		cw.Write(t.data)
		e.pad(w.alignment)
	}
	if err := cw.w.(*bufio.Writer).Flush(); err != nil && cw.err == nil {
		cw.err = err
	}
	return cw.n, cw.err
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

type encoder struct{ w *countWriter }

func (e encoder) u32(v uint32) { e.w.Write(binary.LittleEndian.AppendUint32(nil, v)) }
func (e encoder) u64(v uint64) { e.w.Write(binary.LittleEndian.AppendUint64(nil, v)) }
func (e encoder) str(s string) { e.u64(uint64(len(s))); io.WriteString(e.w, s) }
func (e encoder) pad(a uint64) {
	if r := uint64(e.w.n) % a; r != 0 {
		e.w.Write(make([]byte, a-r))
	}
}

func (e encoder) value(v any) {
	le := binary.LittleEndian
	switch x := v.(type) {
	case uint8:
		e.w.Write([]byte{x})
	case int8:
		e.w.Write([]byte{byte(x)})
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		e.w.Write([]byte{b})
	case uint16:
		e.w.Write(le.AppendUint16(nil, x))
	case int16:
		e.w.Write(le.AppendUint16(nil, uint16(x)))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case string:
		e.str(x)
	case Array:
		e.u32(uint32(x.Elem))
		e.u64(uint64(x.Len()))
		e.elems(x.Values)
	}
}

func (e encoder) elems(vs any) {
	switch x := vs.(type) {
	case []uint8:
		e.w.Write(x)
	case []string:
		for _, s := range x {
			e.str(s)
		}
	case []Array:
		for _, a := range x {
			e.value(a)
		}
	default:
		forEach(vs, e.value)
	}
}

func forEach(vs any, f func(any)) {
	switch x := vs.(type) {
	case []int8:
		for _, v := range x {
			f(v)
		}
	case []bool:
		for _, v := range x {
			f(v)
		}
	case []uint16:
		for _, v := range x {
			f(v)
		}
	case []int16:
		for _, v := range x {
			f(v)
		}
	case []uint32:
		for _, v := range x {
			f(v)
		}
	case []int32:
		for _, v := range x {
			f(v)
		}
	case []float32:
		for _, v := range x {
			f(v)
		}
	case []uint64:
		for _, v := range x {
			f(v)
		}
	case []int64:
		for _, v := range x {
			f(v)
		}
	case []float64:
		for _, v := range x {
			f(v)
		}
	}
}

// toValue maps a Go value to its GGUF value type.
func toValue(v any) (Value, error) {
	switch x := v.(type) {
	case uint8:
		return Value{TypeUint8, x}, nil
	case int8:
		return Value{TypeInt8, x}, nil
	case uint16:
		return Value{TypeUint16, x}, nil
	case int16:
		return Value{TypeInt16, x}, nil
	case uint32:
		return Value{TypeUint32, x}, nil
	case int32:
		return Value{TypeInt32, x}, nil
	case float32:
		return Value{TypeFloat32, x}, nil
	case bool:
		return Value{TypeBool, x}, nil
	case string:
		return Value{TypeString, x}, nil
	case uint64:
		return Value{TypeUint64, x}, nil
	case int64:
		return Value{TypeInt64, x}, nil
	case float64:
		return Value{TypeFloat64, x}, nil
	case Array:
		return Value{TypeArray, x}, nil
	}
	elem, ok := sliceElemType(v)
	if !ok {
		return Value{}, fmt.Errorf("unsupported metadata Go type %T", v)
	}
	return Value{TypeArray, Array{Elem: elem, Values: v}}, nil
}

func sliceElemType(v any) (ValueType, bool) {
	switch v.(type) {
	case []uint8:
		return TypeUint8, true
	case []int8:
		return TypeInt8, true
	case []uint16:
		return TypeUint16, true
	case []int16:
		return TypeInt16, true
	case []uint32:
		return TypeUint32, true
	case []int32:
		return TypeInt32, true
	case []float32:
		return TypeFloat32, true
	case []bool:
		return TypeBool, true
	case []string:
		return TypeString, true
	case []uint64:
		return TypeUint64, true
	case []int64:
		return TypeInt64, true
	case []float64:
		return TypeFloat64, true
	case []Array:
		return TypeArray, true
	}
	return 0, false
}
