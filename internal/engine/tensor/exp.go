package tensor

import "math"

// Single-precision exp for softmax, the same algorithm in Go (here) and in
// SIMD assembly: n = round(x·log2 e); r = x − n·ln 2 in two steps (C1 is ln 2
// rounded to 12 bits, so n·C1 is exact); e^r by a degree-7 polynomial
// (1 + r + r²·P(r), the Cephes expf coefficients); then 2^n multiplied in
// through the exponent bits. Inputs are clamped to [expMin, expMax], so the
// result is a normal float32 within about 1 ulp of e^x and never overflows.
const (
	expLog2e = 1.44269504088896341
	expC1    = 0.693359375
	expC2    = -2.12194440e-4
	expP0    = 1.9875691500e-4
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
	expMin   = -87.33654 // e^expMin is about the smallest normal float32
	expMax   = 88.0
)

// ExpSubFunc replaces every x[i] with e^(x[i]−m) and returns their sum.
type ExpSubFunc func(x []float32, m float32) float32

// expf32 is the scalar form of the algorithm.
func expf32(x float32) float32 {
	x = min(max(x, expMin), expMax)
	n := float32(math.RoundToEven(float64(x * expLog2e)))
	x -= n * expC1
	x -= n * expC2
	z := x * x
	p := float32(expP0)
	p = p*x + expP1
	p = p*x + expP2
	p = p*x + expP3
	p = p*x + expP4
	p = p*x + expP5
	p = p*z + x + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

func expSub(x []float32, m float32) float32 {
	var sum float32
	for i, v := range x {
		e := expf32(v - m)
		x[i] = e
		sum += e
	}
	return sum
}

// ExpSub replaces every x[i] with e^(x[i]−m) (clamped to the normal float32
// range) and returns their sum: the exponentials of a softmax, with m the
// largest x[i]. The result depends only on x and m, never on where x sits in
// memory. The SIMD variants sum in vector lanes, so their sums (and the
// last bits of their exponentials, through FMA) differ slightly from the
// generic ones.
func (k Kernels) ExpSub(x []float32, m float32) float32 {
	return k.table().expSub(x, m)
}

// SwiGLUFunc replaces every gate[i] with silu(gate[i])·up[i].
type SwiGLUFunc func(gate, up []float32)

// swiglu is the gated activation of a llama feed-forward block, with silu(x)
// = x/(1 + e^−x) on expf32, the exponential ExpSub uses (ggml's SIMD SiLU
// likewise uses its own vector expf).
func swiglu(gate, up []float32) {
	up = up[:len(gate)]
	for i, g := range gate {
		gate[i] = g / (1 + expf32(-g)) * up[i]
	}
}

// SwiGLU replaces every gate[i] with silu(gate[i])·up[i]; up must be at
// least as long as gate. Each result depends only on gate[i] and up[i]; the
// SIMD variants use FMA in the exponential, so their last bits can differ
// from the generic ones.
func (k Kernels) SwiGLU(gate, up []float32) {
	if len(up) < len(gate) {
		panic("tensor: SwiGLU: up is shorter than gate")
	}
	k.table().swiglu(gate, up)
}

// scaleMax multiplies every x[i] by s and returns the largest product
// (−Inf for no x): the first pass of a scaled softmax.
func scaleMax(x []float32, s float32) float32 {
	m := float32(math.Inf(-1))
	for i := range x {
		x[i] *= s
		if x[i] > m {
			m = x[i]
		}
	}
	return m
}

// scale multiplies every x[i] by s.
func scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// ScaleMax multiplies every x[i] by s in place and returns the largest
// product (−Inf when x is empty). Each product is one rounded multiply, so
// every kernel set gives the same values.
func (k Kernels) ScaleMax(x []float32, s float32) float32 { return k.table().scaleMax(x, s) }

// Scale multiplies every x[i] by s in place, the same values in every
// kernel set.
func (k Kernels) Scale(x []float32, s float32) { k.table().scale(x, s) }
