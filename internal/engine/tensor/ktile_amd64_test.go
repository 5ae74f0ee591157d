//go:build amd64 && !purego

package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKQuantTileAVX2 checks the AVX2 Q4_K, Q5_K and Q6_K tiles pair by pair
// against the one-row AVX2 kernels directly, bit for bit: every row and
// activation count from 1 to 9 (whole 2×4 register tiles, their edges and
// tiles too small for one), one and many blocks, padded strides and the
// integer extremes of both weight types.
func TestKQuantTileAVX2(t *testing.T) {
	if f := cpuFeatures(); !f.AVX2 || !f.FMA || !f.F16C {
		t.Skip("this CPU lacks AVX2, FMA or F16C")
	}
	k := Select(Features{AVX2: true, FMA: true, F16C: true}, false)
	r := rand.New(rand.NewPCG(37, 38))
	for _, c := range []struct {
		typ Type
		one VecDotFunc
	}{{Q4_K, vecDotQ4_KAVX2}, {Q5_K, vecDotQ5_KAVX2}, {Q6_K, vecDotQ6_KAVX2}} {
		for _, nb := range []int{1, 2, 13} {
			n := nb * QK_K
			for nrows := 1; nrows <= 9; nrows++ {
				for nacts := 1; nacts <= 9; nacts++ {
					extreme := (nrows+nacts)%2 == 0
					rows, rs, acts, as := tileOperands(r, c.typ, n, nrows, nacts, r.IntN(7), extreme)
					if extreme && c.typ == Q6_K {
						q6KExtremes(r, rows, rs, nrows, nb)
					}
					if extreme && c.typ == Q5_K {
						// Every scale and min 63, every quant 31.
						for i := 0; i < nrows; i++ {
							for j := 0; j < nb*176; j++ {
								if j%176 >= 4 {
									rows[i*rs+j] = 0xff
								}
							}
						}
					}
					rb, ab := len(rows)-(nrows-1)*rs, len(acts)-(nacts-1)*as
					outStride := nrows + r.IntN(3)
					out := make([]float32, (nacts-1)*outStride+nrows)
					k.VecDotTile(c.typ, rows, rs, nrows, acts, as, nacts, n, out, outStride)
					for a := 0; a < nacts; a++ {
						for rr := 0; rr < nrows; rr++ {
							want := c.one(rows[rr*rs:rr*rs+rb], acts[a*as:a*as+ab], n)
							got := out[a*outStride+rr]
							if math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%s nb=%d %dx%d extreme=%v row %d act %d: tile %g, one-row %g",
									c.typ, nb, nrows, nacts, extreme, rr, a, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// q6KExtremes sets every Q6_K quant of the rows to 0 or 63 and every scale
// to −128 or 127: the largest integer sums a block can make.
func q6KExtremes(r *rand.Rand, rows []byte, stride, nrows, nb int) {
	for i := 0; i < nrows; i++ {
		for b := 0; b < nb; b++ {
			x := rows[i*stride+b*210:]
			v := []byte{0x00, 0xff}[r.IntN(2)]
			for j := 0; j < 192; j++ {
				x[j] = v
			}
			for j := 192; j < 208; j++ {
				x[j] = []byte{0x80, 0x7f}[r.IntN(2)]
			}
		}
	}
}
