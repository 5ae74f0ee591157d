//go:build amd64 && !purego

package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkKQuantRow times the AVX2 one-row K-quant kernels over 64
// distinct rows of n elements against one Q8_K activation row, reporting
// ns/row: the same shapes bench/kquantbench.c times ggml's vec_dot on.
func BenchmarkKQuantRow(b *testing.B) {
	const nrows = 64
	for _, c := range []struct {
		typ Type
		f   VecDotFunc
	}{{Q4_K, vecDotQ4_KAVX2}, {Q6_K, vecDotQ6_KAVX2}} {
		for _, n := range []int{2048, 8192} {
			b.Run(fmt.Sprintf("%s/n=%d", c.typ, n), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				rows, rs, acts, _ := tileOperands(r, c.typ, n, nrows, 1, 0, false)
				var sink float32
				for b.Loop() {
					for i := 0; i < nrows; i++ {
						sink += c.f(rows[i*rs:(i+1)*rs], acts, n)
					}
				}
				_ = sink
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nrows), "ns/row")
			})
		}
	}
}
