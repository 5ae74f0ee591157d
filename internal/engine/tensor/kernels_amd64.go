//go:build amd64 && !purego

package tensor

import "unsafe"

// AVX2 kernels (vecdot_amd64.s). Each computes what the generic function of
// the same name without the suffix computes (vecdot.go, dot.go): the same
// exact integer sums per block, with the float accumulation spread over
// vector lanes, so results differ from the generic ones only by float
// rounding. They trust their caller to have checked the sizes (CheckDot): row
// and act hold exactly n elements of their types. The Q8_0 kernel also relies
// on activations from QuantizeAct, whose quants lie in [−127, 127], and the
// Q6_K kernel on Q8_K activations whose bsums are the sums of their quants.

//go:noescape
func vecDotF32AVX2(row, act []byte, n int) float32

//go:noescape
func vecDotF16AVX2(row, act []byte, n int) float32

//go:noescape
func vecDotBF16AVX2(row, act []byte, n int) float32

//go:noescape
func vecDotQ8_0AVX2(row, act []byte, n int) float32

//go:noescape
func vecDotQ4_0AVX2(row, act []byte, n int) float32

// AVX512_VNNI (with AVX512VL, on ymm registers) variants of the AVX2 int8
// kernels: VPDPBUSD does the multiply and both pairwise additions at once.

//go:noescape
func vecDotQ8_0VNNI(row, act []byte, n int) float32

//go:noescape
func vecDotQ4_0VNNI(row, act []byte, n int) float32

//go:noescape
func vecDotQ4_KAVX2(row, act []byte, n int) float32

//go:noescape
func vecDotQ5_KAVX2(row, act []byte, n int) float32

//go:noescape
func vecDotQ6_KAVX2(row, act []byte, n int) float32

// dotF32F32AVX2 is dotF32F32 on the F32 vec-dot kernel: the float
// activations are the same bytes as an F32 activation row.
func dotF32F32AVX2(row []byte, x []float32) float32 {
	act := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
	return vecDotF32AVX2(row, act, len(x))
}

// haveArchKernels says whether this build has assembly kernels at all.
const haveArchKernels = true

// archTable returns the SIMD kernel table for f, or nil when f lacks what
// every SIMD kernel here needs (AVX2, FMA and F16C).
func archTable(f Features) *kernelTable {
	if !f.AVX2 || !f.FMA || !f.F16C {
		return nil
	}
	t := genericTable()
	t.name = "avx2"
	t.dotF32[F32] = dotF32F32AVX2
	t.vecDot[F32] = vecDotF32AVX2
	t.vecDot[F16] = vecDotF16AVX2
	t.vecDot[BF16] = vecDotBF16AVX2
	t.vecDot[Q8_0] = vecDotQ8_0AVX2
	t.vecDot[Q4_0] = vecDotQ4_0AVX2
	t.vecDot[Q4_K] = vecDotQ4_KAVX2
	t.vecDot[Q5_K] = vecDotQ5_KAVX2
	t.vecDot[Q6_K] = vecDotQ6_KAVX2
	if !f.AVX512F || !f.AVX512VL || !f.AVX512VNNI {
		return t
	}
	t.name = "avx512"
	t.vecDot[Q8_0] = vecDotQ8_0VNNI
	t.vecDot[Q4_0] = vecDotQ4_0VNNI
	return t
}
