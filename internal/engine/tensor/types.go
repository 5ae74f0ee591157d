// Package tensor defines the GGML tensor element types as GGUF stores them:
// their block layouts, dequantization, the quantizers the tests use to write
// models, and dot products between a stored row and an activation vector.
// The dot products come in a portable Go set, the reference, and SIMD sets
// that replace entries per type: on amd64 "avx2" (AVX2, FMA and F16C) and
// "avx512" (adding AVX-512 tiles and AVX512_VNNI kernels), on arm64 "neon"
// and "neon-dotprod" (SDOT); the generated assembly comes from gen_*.py.
// Best picks one per process, and Capped within a cap
// (SKULK_KERNELS=generic|avx2|neon, which the caller reads and passes down).
package tensor

import (
	"fmt"
	"math"
)

// Type is a GGML tensor type id exactly as GGUF stores it.
type Type uint32

// The GGML type ids. Ids 4, 5 and 31–33 were retired upstream and are not
// valid in files.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
)

// QK_K is the super-block size of the K-quants.
const QK_K = 256

type layout struct {
	name       string
	blockElems int // elements per block
	blockBytes int // bytes per block
	supported  bool
}

// layouts holds every type GGUF files may carry, so a file with a type we
// cannot compute with still parses and is refused by name later.
var layouts = map[Type]layout{
	F32:     {"F32", 1, 4, true},
	F16:     {"F16", 1, 2, true},
	Q4_0:    {"Q4_0", 32, 18, true},
	Q4_1:    {"Q4_1", 32, 20, true},
	Q5_0:    {"Q5_0", 32, 22, true},
	Q5_1:    {"Q5_1", 32, 24, true},
	Q8_0:    {"Q8_0", 32, 34, true},
	Q8_1:    {"Q8_1", 32, 36, false},
	Q2_K:    {"Q2_K", QK_K, 84, true},
	Q3_K:    {"Q3_K", QK_K, 110, true},
	Q4_K:    {"Q4_K", QK_K, 144, true},
	Q5_K:    {"Q5_K", QK_K, 176, true},
	Q6_K:    {"Q6_K", QK_K, 210, true},
	Q8_K:    {"Q8_K", QK_K, 292, false},
	IQ2_XXS: {"IQ2_XXS", QK_K, 66, false},
	IQ2_XS:  {"IQ2_XS", QK_K, 74, false},
	IQ3_XXS: {"IQ3_XXS", QK_K, 98, false},
	IQ1_S:   {"IQ1_S", QK_K, 50, false},
	IQ4_NL:  {"IQ4_NL", 32, 18, true},
	IQ3_S:   {"IQ3_S", QK_K, 110, false},
	IQ2_S:   {"IQ2_S", QK_K, 82, false},
	IQ4_XS:  {"IQ4_XS", QK_K, 136, true},
	I8:      {"I8", 1, 1, false},
	I16:     {"I16", 1, 2, false},
	I32:     {"I32", 1, 4, false},
	I64:     {"I64", 1, 8, false},
	F64:     {"F64", 1, 8, false},
	IQ1_M:   {"IQ1_M", QK_K, 56, false},
	BF16:    {"BF16", 1, 2, true},
	TQ1_0:   {"TQ1_0", QK_K, 54, false},
	TQ2_0:   {"TQ2_0", QK_K, 66, false},
	MXFP4:   {"MXFP4", 32, 17, true},
}

// String returns the GGML name of the type, or "type(N)" for an unknown id.
func (t Type) String() string {
	if l, ok := layouts[t]; ok {
		return l.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Known reports whether t is a GGML type whose block layout is known, so the
// byte size of a tensor of that type can be computed.
func (t Type) Known() bool { _, ok := layouts[t]; return ok }

// Supported reports whether the engine can dequantize and compute with t.
func (t Type) Supported() bool { return layouts[t].supported }

// layoutByID is layouts as an array: BlockElems and BlockBytes sit on the
// per-row path of every dot product, where a map lookup costs as much as a
// short SIMD kernel.
var layoutByID = func() (a [typeSlots]layout) {
	for t, l := range layouts {
		a[t] = l
	}
	return a
}()

func layoutOf(t Type) layout {
	if uint32(t) < typeSlots {
		return layoutByID[t]
	}
	return layout{}
}

// BlockElems is the number of elements in one block (1 for plain types).
func (t Type) BlockElems() int { return layoutOf(t).blockElems }

// BlockBytes is the size in bytes of one block.
func (t Type) BlockBytes() int { return layoutOf(t).blockBytes }

// ParseType maps a GGML type name (case-sensitive, as String prints it) to its id.
func ParseType(name string) (Type, bool) {
	for t, l := range layouts {
		if l.name == name {
			return t, true
		}
	}
	return 0, false
}

// RowBytes returns the byte size of n consecutive elements of type t. n must
// be a whole number of blocks; the result must fit in an int64.
func RowBytes(t Type, n int64) (int64, error) {
	l, ok := layouts[t]
	if !ok {
		return 0, fmt.Errorf("tensor: unknown type %s", t)
	}
	if n < 0 {
		return 0, fmt.Errorf("tensor: negative element count %d", n)
	}
	if n%int64(l.blockElems) != 0 {
		return 0, fmt.Errorf("tensor: %d elements of %s is not a whole number of %d-element blocks", n, t, l.blockElems)
	}
	blocks := n / int64(l.blockElems)
	if blocks > math.MaxInt64/int64(l.blockBytes) {
		return 0, fmt.Errorf("tensor: %d elements of %s overflow a 64-bit size", n, t)
	}
	return blocks * int64(l.blockBytes), nil
}
