//go:build amd64 && !purego

package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestAsmRowsMatchOneRow checks each assembly row loop against its
// one-row kernel called row by row, bit for bit, over rows further apart
// than they are long, and that it writes exactly the rows asked for.
func TestAsmRowsMatchOneRow(t *testing.T) {
	if !cpuFeatures().AVX2 || !cpuFeatures().FMA || !cpuFeatures().F16C {
		t.Skip("this CPU lacks AVX2, FMA or F16C")
	}
	for _, tc := range []struct {
		t    Type
		one  VecDotFunc
		rows asmRowsFunc
	}{
		{Q8_0, vecDotQ8_0AVX2, vecDotQ8_0RowsAVX2},
		{Q4_0, vecDotQ4_0AVX2, vecDotQ4_0RowsAVX2},
		{Q4_K, vecDotQ4_KAVX2, vecDotQ4_KRowsAVX2},
		{Q5_K, vecDotQ5_KAVX2, vecDotQ5_KRowsAVX2},
		{Q6_K, vecDotQ6_KAVX2, vecDotQ6_KRowsAVX2},
		{Q2_K, vecDotQ2_KAVX2, vecDotQ2_KRowsAVX2},
		{Q3_K, vecDotQ3_KAVX2, vecDotQ3_KRowsAVX2},
		{IQ4_NL, vecDotIQ4_NLAVX2, vecDotIQ4_NLRowsAVX2},
		{IQ4_XS, vecDotIQ4_XSAVX2, vecDotIQ4_XSRowsAVX2},
		{MXFP4, vecDotMXFP4AVX2, vecDotMXFP4RowsAVX2},
	} {
		for _, n := range []int{256, 1024, 2816} {
			t.Run(fmt.Sprintf("%s/n=%d", tc.t, n), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(n), uint64(tc.t)))
				const nrows = 7
				rb := rowLen(tc.t, n)
				stride := rb + 40
				w := make([]byte, nrows*stride)
				for i := range nrows {
					q, err := Quantize(tc.t, gaussian(r, n, 0.05))
					if err != nil {
						t.Fatal(err)
					}
					copy(w[i*stride:], q)
				}
				act := make([]byte, rowLen(VecDotType(tc.t), n))
				if err := QuantizeAct(tc.t, gaussian(r, n, 1), act); err != nil {
					t.Fatal(err)
				}
				out := make([]float32, nrows+1)
				out[nrows] = 12345
				rowsAsm(tc.t, tc.rows, w, stride, act, n, out[:nrows])
				for i := range nrows {
					want := tc.one(w[i*stride:i*stride+rb], act, n)
					if math.Float32bits(out[i]) != math.Float32bits(want) {
						t.Errorf("row %d: %v, one-row kernel %v", i, out[i], want)
					}
				}
				if out[nrows] != 12345 {
					t.Errorf("the loop wrote past its %d rows", nrows)
				}
			})
		}
	}
}
