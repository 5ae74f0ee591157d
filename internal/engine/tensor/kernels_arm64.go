//go:build arm64 && !purego

package tensor

//go:generate sh -c "python3 gen_neon.py > vecdot_arm64.s"

// NEON kernels (vecdot_arm64.s): F32, F16 and BF16 on plain NEON, the
// integer types (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K; the 2–4-bit ones in
// vecdot_lowbit_arm64.s) with SDOT, the ARMv8.2
// dot-product extension every Apple M-series and Neoverse core has. Each
// computes what the generic function of the same name without the suffix
// computes (vecdot.go): the same exact integer sums per block, the float
// accumulation spread over vector lanes, so results differ from the
// generic ones only by float rounding. They trust their caller to have
// checked the sizes (CheckDot).

//go:noescape
func vecDotF32NEON(row, act []byte, n int) float32

//go:noescape
func vecDotF16NEON(row, act []byte, n int) float32

//go:noescape
func vecDotBF16NEON(row, act []byte, n int) float32

//go:noescape
func vecDotQ8_0NEON(row, act []byte, n int) float32

//go:noescape
func vecDotQ4_0NEON(row, act []byte, n int) float32

//go:noescape
func vecDotQ4_KNEON(row, act []byte, n int) float32

//go:noescape
func vecDotQ5_KNEON(row, act []byte, n int) float32

//go:noescape
func vecDotQ6_KNEON(row, act []byte, n int) float32

// dotF16F32NEON is dotF32 for fp16 rows: len(row) is 2·len(x).
//
//go:noescape
func dotF16F32NEON(row []byte, x []float32) float32

// quantF16NEON is quantF16 over n values, a multiple of 8, bit for bit
// except for NaN payloads.
//
//go:noescape
func quantF16NEON(x *float32, dst *byte, n int)

func quantF16SIMD(x []float32, dst []byte) {
	n := len(x) &^ 7
	if n > 0 {
		quantF16NEON(&x[0], &dst[0], n)
	}
	quantF16(x[n:], dst[2*n:])
}

// dotF32F32NEON is dotF32F32 on the F32 vec-dot kernel: the float
// activations are the same bytes as an F32 activation row.
func dotF32F32NEON(row []byte, x []float32) float32 {
	return vecDotF32NEON(row, F32Bytes(x), len(x))
}

// haveArchKernels says whether this build has assembly kernels at all.
const haveArchKernels = true

// archTable returns the NEON kernel table for f, or nil without NEON.
func archTable(f Features) *kernelTable {
	if !f.NEON {
		return nil
	}
	t := genericTable()
	t.name = "neon"
	t.dotF32[F32] = dotF32F32NEON
	t.vecDot[F32] = vecDotF32NEON
	t.vecDot[F16] = vecDotF16NEON
	t.vecDot[BF16] = vecDotBF16NEON
	t.dotF32[F16] = dotF16F32NEON
	t.quantizeAct[F16] = quantF16SIMD
	if !f.ARMDotProd {
		return t
	}
	t.name = "neon-dotprod"
	t.vecDot[Q8_0] = vecDotQ8_0NEON
	t.vecDot[Q4_0] = vecDotQ4_0NEON
	t.vecDot[Q4_K] = vecDotQ4_KNEON
	t.vecDot[Q5_K] = vecDotQ5_KNEON
	t.vecDot[Q6_K] = vecDotQ6_KNEON
	setLowbitNEON(t)
	return t
}
