package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpSub checks every kernel set's softmax exponentials against
// float64 math.Exp (within 2 ulp, after the documented clamp) and their sum
// against the float64 sum, over lengths around the vector widths and inputs
// from 0 down past the clamp, and that each element's value does not depend
// on its position (vector body or tail).
func TestExpSub(t *testing.T) {
	tileKernels(t, func(t *testing.T, k Kernels) {
		r := rand.New(rand.NewPCG(35, 36))
		for _, n := range []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 64, 100, 1000} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.Float64()*110 - 100)
			}
			m := float32(3)
			if n > 0 {
				x[r.IntN(n)] = m
			}
			in := append([]float32(nil), x...)
			sum := k.ExpSub(x, m)
			var want float64
			for i, v := range x {
				d := max(float64(in[i]-m), expMin)
				e := math.Exp(d)
				want += float64(v)
				if rel := math.Abs(float64(v)-e) / e; rel > 0x1p-22 {
					t.Fatalf("%s n=%d: exp(%g) = %g, want %g (relative error %g)", k.Name(), n, d, v, e, rel)
				}
				one := []float32{in[i]}
				if k.ExpSub(one, m); one[0] != v {
					t.Fatalf("%s n=%d: exp(%g) is %g at index %d but %g alone", k.Name(), n, d, v, i, one[0])
				}
			}
			if math.Abs(float64(sum)-want) > float64(n+1)*0x1p-23*want {
				t.Errorf("%s n=%d: sum %g, want %g", k.Name(), n, sum, want)
			}
		}
		// e^0 is exactly 1: a softmax's largest term.
		one := []float32{5}
		if k.ExpSub(one, 5); one[0] != 1 {
			t.Errorf("%s: e^0 = %g", k.Name(), one[0])
		}
	})
}

// BenchmarkExpSub measures the softmax exponentials of 256 scores.
func BenchmarkExpSub(b *testing.B) {
	x := make([]float32, 256)
	for _, k := range []Kernels{Generic(), Best()} {
		b.Run(k.Name(), func(b *testing.B) {
			b.SetBytes(4 * int64(len(x)))
			for b.Loop() {
				for i := range x {
					x[i] = float32(-i) / 16
				}
				k.ExpSub(x, 0)
			}
		})
	}
}

// TestSwiGLU checks every kernel set's silu(g)·u against float64 arithmetic
// (within 2⁻²¹ relative, plus 1e-30 absolute for gates below the
// exponential's clamp, where the true value is below 1e-36 anyway), over
// lengths around the vector widths, and that each element's result does not
// depend on its position (vector body or tail).
func TestSwiGLU(t *testing.T) {
	tileKernels(t, func(t *testing.T, k Kernels) {
		r := rand.New(rand.NewPCG(37, 38))
		for _, n := range []int{0, 1, 7, 8, 9, 16, 17, 100, 8192} {
			g := make([]float32, n)
			u := make([]float32, n+3) // up may be longer than gate
			for i := range g {
				g[i] = float32(r.NormFloat64() * 4)
				u[i] = float32(r.NormFloat64())
			}
			if n > 4 {
				g[0], g[1], g[2], g[3] = 0, -100, 100, -87
			}
			in := append([]float32(nil), g...)
			k.SwiGLU(g, u)
			for i, v := range g {
				x := float64(in[i])
				want := x / (1 + math.Exp(-x)) * float64(u[i])
				if d := math.Abs(float64(v) - want); d > 0x1p-21*math.Abs(want)+1e-30 {
					t.Fatalf("%s n=%d: silu(%g)·%g = %g, want %g", k.Name(), n, x, u[i], v, want)
				}
				one := []float32{in[i]}
				if k.SwiGLU(one, u[i:i+1]); one[0] != v {
					t.Fatalf("%s n=%d: silu(%g)·%g is %g at index %d but %g alone", k.Name(), n, x, u[i], v, i, one[0])
				}
			}
		}
	})
}

// BenchmarkSwiGLU measures the gated activation of one 8192-wide row.
func BenchmarkSwiGLU(b *testing.B) {
	g, u := make([]float32, 8192), make([]float32, 8192)
	for i := range u {
		u[i] = 1
	}
	for _, k := range []Kernels{Generic(), Best()} {
		b.Run(k.Name(), func(b *testing.B) {
			b.SetBytes(4 * int64(len(g)))
			for b.Loop() {
				for i := range g {
					g[i] = float32(i-4096) / 512
				}
				k.SwiGLU(g, u)
			}
		})
	}
}

// TestScaleMax checks that every kernel set's ScaleMax and Scale give the
// generic products bit for bit and the exact maximum, over lengths around
// the vector widths, with the maximum at every position class.
func TestScaleMax(t *testing.T) {
	tileKernels(t, func(t *testing.T, k Kernels) {
		r := rand.New(rand.NewPCG(43, 44))
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 100, 513} {
			for trial := 0; trial < 3; trial++ {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64() * 30)
				}
				if n > 0 {
					x[r.IntN(n)] = 500 // the maximum anywhere, body or tail
				}
				want := append([]float32(nil), x...)
				wm := scaleMax(want, 0.125)
				got := append([]float32(nil), x...)
				if gm := k.ScaleMax(got, 0.125); gm != wm && !(n == 0 && math.IsInf(float64(gm), -1)) {
					t.Fatalf("%s n=%d: max %g, want %g", k.Name(), n, gm, wm)
				}
				k.Scale(got, 1/3.0)
				scale(want, 1/3.0)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s n=%d: x[%d] = %g, want %g", k.Name(), n, i, got[i], want[i])
					}
				}
			}
		}
	})
}
