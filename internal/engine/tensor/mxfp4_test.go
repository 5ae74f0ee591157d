package tensor

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// TestE8M0Half checks the MXFP4 block scale against its definition,
// 2^(e−128), for every exponent byte, subnormal ones (e < 2) included.
func TestE8M0Half(t *testing.T) {
	for e := 0; e < 256; e++ {
		if got, want := float64(e8m0Half(uint8(e))), math.Ldexp(1, e-128); got != want {
			t.Errorf("e8m0Half(%d) = %g, want %g", e, got, want)
		}
	}
}

// TestSIMDMXFP4Exponents runs the MXFP4 kernels over blocks whose
// exponents span the whole byte, the subnormal scales of e = 0 and 1
// included, in rows long enough for both the four-block and the one-block
// paths; the activation scales keep every block product a normal float.
func TestSIMDMXFP4Exponents(t *testing.T) {
	simdPaths(t, func(t *testing.T, k Kernels) {
		g := Generic()
		r := rand.New(rand.NewPCG(31, 32))
		for _, nb := range []int{1, 3, 4, 5, 8, 11} {
			for trial := 0; trial < 20; trial++ {
				row := make([]byte, 17*nb)
				act := make([]byte, 34*nb)
				for b := 0; b < nb; b++ {
					e := []uint8{0, 1, 2, 3, 100, 127, 200, 250}[r.IntN(8)]
					row[17*b] = e
					for j := 1; j < 17; j++ {
						row[17*b+j] = byte(r.Uint32())
					}
					// y.d large for tiny weight scales, small for huge ones.
					ye := 14
					if e > 127 {
						ye = -14 - int(e-127)/16
					}
					binary.LittleEndian.PutUint16(act[34*b:], F32ToF16(float32(math.Ldexp(1, ye))))
					for j := 2; j < 34; j++ {
						act[34*b+j] = byte(int8(r.IntN(255) - 127))
					}
				}
				n := 32 * nb
				want := g.VecDot(MXFP4, row, act, n)
				got := k.VecDot(MXFP4, row, act, n)
				xw, xa := make([]float32, n), make([]float32, n)
				_ = g.Dequantize(MXFP4, row, xw)
				_ = g.Dequantize(Q8_0, act, xa)
				_, mag := exactDot(xw, xa)
				if d := math.Abs(float64(got) - float64(want)); d > 1e-6*mag || math.IsNaN(float64(got)) {
					t.Fatalf("nb=%d trial %d: %s = %g, generic = %g (|Δ| %g, Σ|w·a| %g)", nb, trial, k.Name(), got, want, d, mag)
				}
			}
		}
	})
}
