package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/skulk/skulk/internal/engine/tensor"
)

const (
	magic = 0x46554747 // "GGUF" read as a little-endian uint32

	// DefaultAlignment applies when general.alignment is absent.
	DefaultAlignment = 32

	// MaxDims is the most dimensions a tensor may have (GGML_MAX_DIMS).
	MaxDims = 4
)

// TensorInfo describes one tensor. Dims are in GGML order: Dims[0] is the
// innermost (row length).
type TensorInfo struct {
	Name   string
	Type   tensor.Type
	Dims   []uint64
	Offset uint64 // relative to the start of the data section
	Size   int64  // bytes
}

// Elems is the number of elements.
func (t TensorInfo) Elems() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= int64(d)
	}
	return n
}

// decoder reads little-endian fields from a byte slice, tracking the offset
// and charging what parsing allocates against a budget.
//
// Field names are built only when a read fails: a read takes the name of
// the field relative to its caller, and each enclosing level prefixes its
// own part to the *FormatError on the way out (with prefix). Building them
// eagerly would allocate per element, and a long key with a long array
// would then cost far more than the file's bytes.
type decoder struct {
	b      []byte
	off    int64
	used   int64 // bytes charged so far
	budget int64
}

func newDecoder(b []byte) *decoder { return &decoder{b: b, budget: ParseBudget(len(b))} }

func (d *decoder) remaining() int64 { return int64(len(d.b)) - d.off }

func (d *decoder) fail(field string, err error) error {
	return &FormatError{Field: field, Offset: d.off, Err: err}
}

// charge accounts n bytes of allocation about to be made.
func (d *decoder) charge(field string, n int64) error {
	if n < 0 || n > d.budget-d.used {
		return d.fail(field, &LimitError{Limit: "header memory", Value: satAddI(d.used, n), Max: d.budget})
	}
	d.used += n
	return nil
}

func satAddI(a, b int64) int64 {
	if b < 0 || a > 1<<63-1-b {
		return 1<<63 - 1
	}
	return a + b
}

// prefix puts p in front of the field an error names; see decoder.
func prefix(err error, p string) error {
	var fe *FormatError
	if errors.As(err, &fe) {
		fe.Field = p + fe.Field
	}
	return err
}

func (d *decoder) bytes(field string, n int64) ([]byte, error) {
	if n < 0 || n > d.remaining() {
		if n > d.remaining() && d.remaining() >= 0 {
			return nil, d.fail(field, ErrTruncated)
		}
		return nil, d.fail(field, ErrInvalid)
	}
	if d.off+n > MaxHeaderBytes {
		return nil, d.fail(field, &LimitError{Limit: "header bytes", Value: d.off + n, Max: MaxHeaderBytes})
	}
	b := d.b[d.off : d.off+n]
	d.off += n
	return b, nil
}

func (d *decoder) u32(field string) (uint32, error) {
	b, err := d.bytes(field, 4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64(field string) (uint64, error) {
	b, err := d.bytes(field, 8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a u64 element count, checks it against max and that count
// elements of at least minSize bytes each can fit in what remains, so no
// allocation can exceed the file size.
func (d *decoder) count(field string, minSize, max int64) (int, error) {
	at := d.off
	n, err := d.u64(field)
	if err != nil {
		return 0, err
	}
	// The limit first: a count past it is refused at once, also from a
	// prefix (ParseHeader), where a count past the bytes read only asks the
	// caller for a longer prefix.
	if n > uint64(max) {
		return 0, &FormatError{Field: field, Offset: at, Err: &LimitError{Limit: "count", Value: int64(min(n, 1<<63-1)), Max: max}}
	}
	if minSize > 0 && n > uint64(d.remaining()/minSize) {
		return 0, &FormatError{Field: field, Offset: at, Err: fmt.Errorf("%w: count %d needs at least %d bytes, %d remain", ErrTooLarge, n, satMul(n, uint64(minSize)), d.remaining())}
	}
	return int(n), nil
}

func satMul(a, b uint64) uint64 {
	if b != 0 && a > math.MaxUint64/b {
		return math.MaxUint64
	}
	return a * b
}

func (d *decoder) str(field string) (string, error) {
	at := d.off
	n, err := d.u64(field + ".length")
	if err != nil {
		return "", err
	}
	if n > MaxStringLen { // first, as in count
		return "", &FormatError{Field: field, Offset: at, Err: &LimitError{Limit: "string length", Value: int64(min(n, 1<<63-1)), Max: MaxStringLen}}
	}
	if n > uint64(d.remaining()) {
		return "", &FormatError{Field: field, Offset: at, Err: fmt.Errorf("%w: string of %d bytes, %d remain", ErrTruncated, n, d.remaining())}
	}
	b, err := d.bytes(field, int64(n))
	if err != nil {
		return "", err
	}
	if err := d.charge(field, (int64(n)+7)&^7); err != nil {
		return "", err
	}
	return string(b), nil
}

// value reads one value of type t; field names it relative to the caller,
// depth is the number of arrays around it.
func (d *decoder) value(field string, t ValueType, depth int) (any, error) {
	if !t.valid() {
		return nil, d.fail(field+".type", fmt.Errorf("%w: value type %d", ErrInvalid, uint32(t)))
	}
	switch t {
	case TypeString:
		if err := d.charge(field, costString); err != nil {
			return nil, err
		}
		return d.str(field)
	case TypeArray:
		et, err := d.u32(field + ".elem_type")
		if err != nil {
			return nil, err
		}
		if err := d.charge(field, costArray); err != nil {
			return nil, err
		}
		a, err := d.array(field, ValueType(et), depth+1)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	b, err := d.bytes(field, int64(t.fixedSize()))
	if err != nil {
		return nil, err
	}
	switch t {
	case TypeUint8:
		return b[0], nil
	case TypeInt8:
		return int8(b[0]), nil
	case TypeBool:
		if b[0] > 1 {
			return nil, &FormatError{Field: field, Offset: d.off - 1, Err: fmt.Errorf("%w: bool byte %d", ErrInvalid, b[0])}
		}
		return b[0] == 1, nil
	case TypeUint16:
		return binary.LittleEndian.Uint16(b), nil
	case TypeInt16:
		return int16(binary.LittleEndian.Uint16(b)), nil
	case TypeUint32:
		return binary.LittleEndian.Uint32(b), nil
	case TypeInt32:
		return int32(binary.LittleEndian.Uint32(b)), nil
	case TypeFloat32:
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
	case TypeUint64:
		return binary.LittleEndian.Uint64(b), nil
	case TypeInt64:
		return int64(binary.LittleEndian.Uint64(b)), nil
	default: // TypeFloat64
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	}
}

// array reads the count and elements of an array of et, the depth'th array
// level (1 for a top-level array). Every path into an array, nested or not,
// passes the depth check here.
func (d *decoder) array(field string, et ValueType, depth int) (Array, error) {
	if depth > MaxNesting {
		return Array{}, d.fail(field, &LimitError{Limit: "nesting depth", Value: int64(depth), Max: MaxNesting})
	}
	if !et.valid() {
		return Array{}, d.fail(field+".elem_type", fmt.Errorf("%w: element type %d", ErrInvalid, uint32(et)))
	}
	minSize := int64(et.fixedSize())
	switch et {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	n, err := d.count(field+".count", minSize, MaxArrayLen)
	if err != nil {
		return Array{}, err
	}
	a := Array{Elem: et}
	if fs := et.fixedSize(); fs > 0 {
		if err := d.charge(field, int64(n)*int64(fs)+8); err != nil {
			return Array{}, err
		}
		raw, err := d.bytes(field, int64(n)*int64(fs))
		if err != nil {
			return Array{}, err
		}
		a.Values, err = decodeFixed(field, d.off-int64(len(raw)), et, raw, n)
		return a, err
	}
	if et == TypeString {
		if err := d.charge(field, int64(n)*costString); err != nil {
			return Array{}, err
		}
		vs := make([]string, n)
		for i := range vs {
			if vs[i], err = d.str(""); err != nil {
				return Array{}, prefix(err, field+"["+strconv.Itoa(i)+"]")
			}
		}
		a.Values = vs
		return a, nil
	}
	if err := d.charge(field, int64(n)*costArray); err != nil {
		return Array{}, err
	}
	vs := make([]Array, n)
	for i := range vs {
		t, err := d.u32(".elem_type")
		if err == nil {
			vs[i], err = d.array("", ValueType(t), depth+1)
		}
		if err != nil {
			return Array{}, prefix(err, field+"["+strconv.Itoa(i)+"]")
		}
	}
	a.Values = vs
	return a, nil
}

func decodeFixed(field string, at int64, et ValueType, raw []byte, n int) (any, error) {
	le := binary.LittleEndian
	switch et {
	case TypeUint8:
		return append([]uint8(nil), raw...), nil
	case TypeInt8:
		v := make([]int8, n)
		for i := range v {
			v[i] = int8(raw[i])
		}
		return v, nil
	case TypeBool:
		v := make([]bool, n)
		for i := range v {
			if raw[i] > 1 {
				return nil, &FormatError{Field: fmt.Sprintf("%s[%d]", field, i), Offset: at + int64(i), Err: fmt.Errorf("%w: bool byte %d", ErrInvalid, raw[i])}
			}
			v[i] = raw[i] == 1
		}
		return v, nil
	case TypeUint16:
		v := make([]uint16, n)
		for i := range v {
			v[i] = le.Uint16(raw[2*i:])
		}
		return v, nil
	case TypeInt16:
		v := make([]int16, n)
		for i := range v {
			v[i] = int16(le.Uint16(raw[2*i:]))
		}
		return v, nil
	case TypeUint32:
		v := make([]uint32, n)
		for i := range v {
			v[i] = le.Uint32(raw[4*i:])
		}
		return v, nil
	case TypeInt32:
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(le.Uint32(raw[4*i:]))
		}
		return v, nil
	case TypeFloat32:
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return v, nil
	case TypeUint64:
		v := make([]uint64, n)
		for i := range v {
			v[i] = le.Uint64(raw[8*i:])
		}
		return v, nil
	case TypeInt64:
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(le.Uint64(raw[8*i:]))
		}
		return v, nil
	default: // TypeFloat64
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return v, nil
	}
}
