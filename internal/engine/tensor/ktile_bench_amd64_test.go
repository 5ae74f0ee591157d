//go:build amd64 && !purego

package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkKQuantRow times the AVX2 one-row K-quant kernels over 64
// distinct rows of n elements against one Q8_K activation row, reporting
// ns/row: the same shapes bench/vecdotbench.c (-type q4_k, q6_k) times ggml's vec_dot on.
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

// BenchmarkKQuantTile times the AVX2 K-quant tiles (VecDotTile of the avx2
// kernels) against the same products through the one-row kernel looped
// over rows, alternating the two inside every iteration so that the
// machine's drift hits both: ps/MAC of each, from the fastest iteration of
// each (on a shared machine the minimum is what the code costs), and their
// ratio.
func BenchmarkKQuantTile(b *testing.B) {
	const nrows, nacts = 32, 64
	k := Select(Features{AVX2: true, FMA: true, F16C: true}, false)
	for _, typ := range []Type{Q4_K, Q5_K, Q6_K} {
		for _, n := range []int{2048, 8192} {
			b.Run(fmt.Sprintf("%s/n=%d", typ, n), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				rows, rs, acts, as := tileOperands(r, typ, n, nrows, nacts, 0, false)
				out := make([]float32, nrows*nacts)
				tile, loop := time.Duration(1<<62), time.Duration(1<<62)
				for b.Loop() {
					t0 := time.Now()
					k.VecDotTile(typ, rows, rs, nrows, acts, as, nacts, n, out, nrows)
					t1 := time.Now()
					for a := 0; a < nacts; a++ {
						k.VecDotRows(typ, rows, rs, acts[a*as:(a+1)*as], n, out[a*nrows:(a+1)*nrows])
					}
					tile, loop = min(tile, t1.Sub(t0)), min(loop, time.Since(t1))
				}
				macs := float64(nrows * nacts * n)
				b.ReportMetric(float64(tile.Nanoseconds())/macs*1e3, "tile-ps/MAC")
				b.ReportMetric(float64(loop.Nanoseconds())/macs*1e3, "rows-ps/MAC")
				b.ReportMetric(float64(loop)/float64(tile), "speedup")
			})
		}
	}
}
