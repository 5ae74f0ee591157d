package tensor

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/cpu"
)

// Function shapes of the dispatchable kernels. Each assumes its buffers were
// validated by the Kernels method that calls it.
type (
	// DequantizeFunc expands the blocks in src into dst.
	DequantizeFunc func(src []byte, dst []float32)
	// DotF32Func returns Σ w[i]·x[i] over a stored row and float activations.
	DotF32Func func(row []byte, x []float32) float32
	// VecDotFunc returns the dot product of an n-element row with
	// activations in the row type's vec-dot type.
	VecDotFunc func(row, act []byte, n int) float32
	// QuantizeFunc converts floats into a type's blocks.
	QuantizeFunc func(x []float32, dst []byte)
	// VecDotTileFunc computes out[a·outStride+r] for r < nrows, a < nacts:
	// the VecDotFunc of weight row r (rb bytes at rows[r·rowStride:]) with
	// activation row a (at acts[a·actStride:]), each bit for bit what the
	// table's VecDotFunc returns for that pair.
	VecDotTileFunc func(rows []byte, rowStride, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int)
	// VecDotRowsFunc computes out[r] for r < len(out): the VecDotFunc of
	// the weight row at rows[r·stride:] with act, bit for bit.
	VecDotRowsFunc func(rows []byte, stride int, act []byte, n int, out []float32)
	// DotF32TileFunc computes out[i·outStride+r] for i < len(lens) and
	// r < nrows: the dot product of the first lens[i] elements of the row
	// at rows[r·stride:] with those of x[i·xStride:], as Kernels.DotF32Tile
	// describes.
	DotF32TileFunc func(rows []byte, stride, nrows int, x []float32, xStride int, lens []int, out []float32, outStride int)
)

// typeSlots bounds the GGML type ids the tables are indexed by.
const typeSlots = 40

// kernelTable is never modified after its constructor returns.
type kernelTable struct {
	name        string
	dequantize  [typeSlots]DequantizeFunc
	dotF32      [typeSlots]DotF32Func
	vecDot      [typeSlots]VecDotFunc
	vecDotTile  [typeSlots]VecDotTileFunc // nil: loop over vecDotRows
	vecDotRows  [typeSlots]VecDotRowsFunc // nil: loop over vecDot
	dotF32Tile  [typeSlots]DotF32TileFunc // nil: loop over dotF32
	quantizeAct [typeSlots]QuantizeFunc   // indexed by the activation type
	// Packed weights (pack.go): rows per group, 0 for none.
	packRows     [typeSlots]int
	pack         [typeSlots]func(src []byte, rows, nb int, dst []byte)
	vecDotPacked [typeSlots]VecDotPackedFunc
	expSub       ExpSubFunc
	swiglu       SwiGLUFunc
	scaleMax     func(x []float32, s float32) float32
	scale        func(x []float32, s float32)
}

// Kernels is an immutable table of compute kernels, one per type and
// operation, chosen once for the CPU. SIMD variants replace entries of the
// generic table per type without changing callers. The zero Kernels is the
// generic set.
type Kernels struct{ t *kernelTable }

var generic = sync.OnceValue(genericTable)

// Generic returns the portable Go kernels.
func Generic() Kernels { return Kernels{generic()} }

var best = sync.OnceValue(func() Kernels { return Select(cpuFeatures(), false) })

// Best returns the fastest kernels for this CPU, chosen on first use and
// fixed for the life of the process.
func Best() Kernels { return best() }

// Kernel caps, the values of SKULK_KERNELS (read by internal/platform/config): each
// narrows what Capped may use, so every dispatch path can be exercised on
// one machine.
const (
	CapNone    = ""        // everything the CPU has: Best
	CapGeneric = "generic" // the portable Go kernels
	CapAVX2    = "avx2"    // no AVX-512
	CapNEON    = "neon"    // no ARM dot-product extension
)

// ErrUnknownCap is returned by Capped for a name it does not know.
var ErrUnknownCap = errors.New("tensor: unknown kernel cap (want generic, avx2 or neon)")

// Capped returns the fastest kernels for this CPU within cap, one of the
// Cap names.
func Capped(cap string) (Kernels, error) {
	if cap == CapNone {
		return Best(), nil
	}
	f, forceGeneric, ok := capFeatures(cpuFeatures(), cap)
	if !ok {
		return Kernels{}, fmt.Errorf("%w: %q", ErrUnknownCap, cap)
	}
	return Select(f, forceGeneric), nil
}

// capFeatures applies a cap to the detected features; ok is false for a
// name it does not know.
func capFeatures(f Features, cap string) (_ Features, forceGeneric, ok bool) {
	switch cap {
	case CapNone:
	case CapGeneric:
		return Features{}, true, true
	case CapAVX2:
		f.AVX512F, f.AVX512BW, f.AVX512VL, f.AVX512VNNI = false, false, false, false
	case CapNEON:
		f.ARMDotProd = false
	default:
		return f, false, false
	}
	return f, false, true
}

// Features is the set of CPU capabilities kernel selection looks at.
type Features struct {
	AVX2, FMA, F16C, AVX512F, AVX512BW, AVX512VL, AVX512VNNI bool
	NEON, ARMDotProd                                         bool
}

func cpuFeatures() Features {
	return Features{
		AVX2: cpu.X86.HasAVX2, FMA: cpu.X86.HasFMA, F16C: cpu.X86.HasF16C,
		AVX512F: cpu.X86.HasAVX512F, AVX512BW: cpu.X86.HasAVX512BW, AVX512VL: cpu.X86.HasAVX512VL,
		AVX512VNNI: cpu.X86.HasAVX512VNNI,
		NEON:       cpu.ARM64.HasASIMD, ARMDotProd: cpu.ARM64.HasASIMDDP,
	}
}

// Select builds the kernel table for the given CPU features: the generic
// table with SIMD kernels (kernels_<arch>.go) replacing entries per type
// where f allows them. It is pure, so tests can ask for any combination the
// running CPU supports.
func Select(f Features, forceGeneric bool) Kernels {
	if forceGeneric {
		return Generic()
	}
	if t := archTable(f); t != nil {
		return Kernels{t}
	}
	return Generic()
}

func genericTable() *kernelTable {
	t := &kernelTable{name: "generic"}
	t.dequantize[F32] = dequantF32
	t.dequantize[F16] = dequantF16
	t.dequantize[BF16] = dequantBF16
	t.dequantize[Q4_0] = dequantQ4_0
	t.dequantize[Q4_1] = dequantQ4_1
	t.dequantize[Q5_0] = dequantQ5_0
	t.dequantize[Q5_1] = dequantQ5_1
	t.dequantize[Q8_0] = dequantQ8_0
	t.dequantize[Q8_1] = dequantQ8_1
	t.dequantize[Q4_K] = dequantQ4_K
	t.dequantize[Q5_K] = dequantQ5_K
	t.dequantize[Q6_K] = dequantQ6_K
	t.dequantize[Q8_K] = dequantQ8_K
	t.dequantize[Q2_K] = dequantQ2_K
	t.dequantize[Q3_K] = dequantQ3_K
	t.dequantize[IQ4_NL] = dequantIQ4_NL
	t.dequantize[IQ4_XS] = dequantIQ4_XS
	t.dequantize[MXFP4] = dequantMXFP4

	t.dotF32[F32] = dotF32F32
	t.dotF32[F16] = dotF16F32
	for _, ty := range []Type{BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4} {
		t.dotF32[ty] = dotViaDequant(ty, t.dequantize[ty])
	}

	t.vecDot[F32] = vecDotF32
	t.vecDot[F16] = vecDotF16
	t.vecDot[BF16] = vecDotBF16
	t.vecDot[Q8_0] = vecDotQ8_0
	t.vecDot[Q4_0] = vecDotQ4_0
	t.vecDot[Q4_1] = vecDotQ4_1
	t.vecDot[Q5_0] = vecDotQ5_0
	t.vecDot[Q5_1] = vecDotQ5_1
	t.vecDot[Q4_K] = vecDotQ4_K
	t.vecDot[Q5_K] = vecDotQ5_K
	t.vecDot[Q6_K] = vecDotQ6_K
	t.vecDot[Q2_K] = vecDotQ2_K
	t.vecDot[Q3_K] = vecDotQ3_K
	t.vecDot[IQ4_NL] = vecDotIQ4_NL
	t.vecDot[IQ4_XS] = vecDotIQ4_XS
	t.vecDot[MXFP4] = vecDotMXFP4

	t.quantizeAct[F32] = quantF32
	t.quantizeAct[F16] = quantF16
	t.quantizeAct[BF16] = quantBF16
	t.quantizeAct[Q8_0] = quantQ8_0Act
	t.quantizeAct[Q8_1] = quantQ8_1Act
	t.quantizeAct[Q8_K] = quantQ8_K
	t.expSub = expSub
	t.swiglu = swiglu
	t.scaleMax = scaleMax
	t.scale = scale
	return t
}

func (k Kernels) table() *kernelTable {
	if k.t == nil {
		return generic()
	}
	return k.t
}

// Name says which kernel set this is: "generic", "avx2", "avx512", "neon"
// or "neon-dotprod".
func (k Kernels) Name() string { return k.table().name }
