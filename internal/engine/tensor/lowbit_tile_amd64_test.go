//go:build amd64 && !purego

package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestLowbitTileMatchesOneRow checks that the AVX2 register tiles of MXFP4,
// IQ4_NL and IQ4_XS give, for every (row, activation) pair, bit for bit what the
// one-row AVX2 kernel gives: row counts around the tiles' single-row pass,
// 1..9 activations (every tile width and the remainders of four), block
// counts with and without whole quads, a row long enough to take the
// one-row fallback, scales at the subnormal E8M0 values and at the fp16
// extremes, and padded strides.
func TestLowbitTileMatchesOneRow(t *testing.T) {
	if f := cpuFeatures(); !f.AVX2 || !f.FMA || !f.F16C {
		t.Skip("this CPU lacks AVX2, FMA or F16C")
	}
	k := Select(Features{AVX2: true, FMA: true, F16C: true}, false)
	one := map[Type]VecDotFunc{MXFP4: vecDotMXFP4AVX2, IQ4_NL: vecDotIQ4_NLAVX2, IQ4_XS: vecDotIQ4_XSAVX2}
	r := rand.New(rand.NewPCG(71, 72))
	for _, typ := range []Type{MXFP4, IQ4_NL, IQ4_XS} {
		for _, nb := range []int{1, 2, 3, 4, 5, 7, 8, 90, 256, 257, 513, lowbitTileScales + 1} {
			n := typ.BlockElems() * nb
			if typ == IQ4_XS && nb > 90 {
				continue
			}
			for _, nrows := range []int{1, 2, 5} {
				for nacts := 1; nacts <= 9; nacts++ {
					if nb > 256 && nacts > 4 {
						continue
					}
					name := fmt.Sprintf("%s/n=%d/%dx%d", typ, n, nrows, nacts)
					rows, rs, acts, as := tileOperands(r, typ, n, nrows, nacts, r.IntN(5), false)
					if nb <= 8 && typ != IQ4_XS {
						extremeScales(r, typ, rows, rs, nrows, nb, acts, as, nacts)
					}
					rb, ab := len(rows)-(nrows-1)*rs, len(acts)-(nacts-1)*as
					outStride := nrows + r.IntN(3)
					out := make([]float32, (nacts-1)*outStride+nrows)
					k.VecDotTile(typ, rows, rs, nrows, acts, as, nacts, n, out, outStride)
					for a := 0; a < nacts; a++ {
						for rr := 0; rr < nrows; rr++ {
							want := one[typ](rows[rr*rs:rr*rs+rb], acts[a*as:a*as+ab], n)
							if got := out[a*outStride+rr]; math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%s row %d act %d: tile %g (%#x), one-row %g (%#x)", name, rr, a, got, math.Float32bits(got), want, math.Float32bits(want))
							}
						}
					}
				}
			}
		}
	}
}

// extremeScales sets some block scales to the edges the scale code treats
// apart: MXFP4 exponents 0 and 1 (the subnormal e8m0Half) and 2, and
// fp16 activation scales at the largest and smallest normal values.
func extremeScales(r *rand.Rand, typ Type, rows []byte, rs, nrows, nb int, acts []byte, as, nacts int) {
	bb := typ.BlockBytes()
	for i := 0; i < nrows; i++ {
		for b := 0; b < nb; b++ {
			if typ == MXFP4 && r.IntN(2) == 0 {
				rows[i*rs+b*bb] = []byte{0, 1, 2, 120, 140}[r.IntN(5)]
			}
		}
	}
	for a := 0; a < nacts; a++ {
		for b := 0; b < nb; b++ {
			if r.IntN(3) == 0 {
				h := []uint16{0x7bff, 0x0400, 0x0001, 0xfbff}[r.IntN(4)]
				acts[a*as+34*b], acts[a*as+34*b+1] = byte(h), byte(h>>8)
			}
		}
	}
}
