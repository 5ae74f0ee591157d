package encoder

import (
	"math"
	"sync"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// GELU constants of the tanh approximation, as float32 (ggml's GELU_COEF_A
// and SQRT_2_OVER_PI).
const (
	geluCoefA       float32 = 0.044715
	geluSqrt2OverPi float32 = 0.79788456080286535587989211986876
)

// geluTanh is the tanh approximation of GELU evaluated in float32,
// 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))), each operation rounded.
func geluTanh(x float32) float32 {
	inner := float32(geluSqrt2OverPi*x) * float32(1+float32(float32(geluCoefA*x)*x))
	th := float32(math.Tanh(float64(inner)))
	return float32(float32(0.5)*x) * (1 + th)
}

// geluTable maps every F16 bit pattern to GELU of its value, rounded to F16:
// ggml's CPU GELU looks activations up here. Built once, never written after.
var geluTable = sync.OnceValue(func() *[1 << 16]uint16 {
	var t [1 << 16]uint16
	for i := range t {
		t[i] = tensor.F32ToF16(geluTanh(tensor.F16ToF32(uint16(i))))
	}
	return &t
})

// gelu applies GELU in place the way ggml's CPU backend does: 0 at or below
// -10, the identity at or above 10, and in between the F16 table entry of
// the input rounded to F16.
func gelu(x []float32) {
	t := geluTable()
	for i, v := range x {
		switch {
		case v <= -10:
			x[i] = 0
		case v >= 10:
		default:
			x[i] = tensor.F16ToF32(t[tensor.F32ToF16(v)])
		}
	}
}
