package tensor

import (
	"errors"
	"fmt"
)

// ErrUnsupported is matched (errors.Is) by every UnsupportedError.
var ErrUnsupported = errors.New("tensor: unsupported type")

// UnsupportedError reports an operation that has no implementation for a type.
type UnsupportedError struct {
	Op   string // "dequantize", "quantize", "dot", "vecdot", "quantize activations"
	Type Type
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("tensor: %s is not implemented for %s; use a model in F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS or MXFP4", e.Op, e.Type)
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// SizeError reports buffers whose lengths do not fit the type's block layout.
type SizeError struct {
	Op    string
	Type  Type
	Elems int // element count the call asked for
	What  string
	Got   int // length given (bytes, or elements when What says so)
	Want  int // length required; -1 when Elems is not a whole number of blocks
}

func (e *SizeError) Error() string {
	if e.Want < 0 {
		return fmt.Sprintf("tensor: %s %s: %d elements is not a whole number of %d-element blocks",
			e.Op, e.Type, e.Elems, e.Type.BlockElems())
	}
	return fmt.Sprintf("tensor: %s %s: %s has length %d, want %d for %d elements",
		e.Op, e.Type, e.What, e.Got, e.Want, e.Elems)
}

// MaxBlockValue bounds the magnitude of values the block quantizers accept:
// their scales and mins are stored as fp16, whose largest value it is.
const MaxBlockValue = 65504

// ValueError reports a NaN, an Inf, or a value beyond ±MaxBlockValue handed
// to a block quantizer, whose fp16 scales could not represent the block.
type ValueError struct {
	Type  Type
	Index int
	Value float32
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("tensor: quantize %s: element %d is %v; block quantizers need finite values within ±%d (store such tensors as F32)", e.Type, e.Index, e.Value, MaxBlockValue)
}

// checkRow validates that elems elements of t occupy exactly got bytes.
func checkRow(op string, t Type, elems, got int, what string) error {
	be := t.BlockElems()
	if elems < 0 || be == 0 || elems%be != 0 {
		return &SizeError{Op: op, Type: t, Elems: elems, What: what, Got: got, Want: -1}
	}
	want := elems / be * t.BlockBytes()
	if got != want {
		return &SizeError{Op: op, Type: t, Elems: elems, What: what, Got: got, Want: want}
	}
	return nil
}
