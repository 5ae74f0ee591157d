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
