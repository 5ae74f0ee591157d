package tensor

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// lowbitBenchTypes are the ≤4-bit types with tiles that mixture-of-experts
// files ship their experts in (gpt-oss: MXFP4; the 2-bit quantizations of
// DeepSeek and Kimi K2: Q2_K, Q3_K).
var lowbitBenchTypes = []Type{MXFP4, IQ4_NL, IQ4_XS, Q2_K, Q3_K}

// BenchmarkVecDotRowNs times the one-pair kernel of the best table over 64
// distinct rows against one activation row, at gpt-oss's hidden size and at
// 8192, reporting ns/row of the fastest pass over the rows (the one least
// disturbed on a shared machine): the figure bench/vecdotbench prints for
// ggml's vec_dot on the same shapes. tile1 is the same through VecDotTile
// with one activation row, the path decode takes.
func BenchmarkVecDotRowNs(b *testing.B) {
	const nrows = 64
	k := Best()
	for _, typ := range lowbitBenchTypes {
		for _, n := range []int{2880, 8192} {
			if n%typ.BlockElems() != 0 {
				continue
			}
			rows, rs, acts, _ := benchTileOperands(b, typ, n, nrows, 1)
			one := k.table().vecDot[typ]
			b.Run(fmt.Sprintf("%s/n=%d/%s", typ, n, k.Name()), func(b *testing.B) {
				var sink float32
				fastest := time.Duration(math.MaxInt64)
				for b.Loop() {
					t0 := time.Now()
					for r := 0; r < nrows; r++ {
						sink += one(rows[r*rs:(r+1)*rs], acts, n)
					}
					fastest = min(fastest, time.Since(t0))
				}
				_ = sink
				b.ReportMetric(float64(fastest.Nanoseconds())/nrows, "ns/row")
			})
			// The same rows through VecDotTile with one activation, the
			// path decode takes.
			out := make([]float32, nrows)
			b.Run(fmt.Sprintf("%s/n=%d/tile1/%s", typ, n, k.Name()), func(b *testing.B) {
				fastest := time.Duration(math.MaxInt64)
				for b.Loop() {
					t0 := time.Now()
					k.VecDotTile(typ, rows, rs, nrows, acts, len(acts), 1, n, out, nrows)
					fastest = min(fastest, time.Since(t0))
				}
				b.ReportMetric(float64(fastest.Nanoseconds())/nrows, "ns/row")
			})
		}
	}
}

// BenchmarkVecDotTileLowbit multiplies 64 weight rows with 64 activation
// rows through VecDotTile and through VecDotRows one activation at a time
// (the same results), at gpt-oss's hidden size; ns/pair of the fastest
// pass side by side.
func BenchmarkVecDotTileLowbit(b *testing.B) {
	const nrows, nacts = 64, 64
	k := Best()
	for _, typ := range lowbitBenchTypes {
		n := 2880
		if typ.BlockElems() == QK_K {
			n = 2816
		}
		rows, rs, acts, as := benchTileOperands(b, typ, n, nrows, nacts)
		out := make([]float32, nrows*nacts)
		b.Run(fmt.Sprintf("%s/n=%d/tile/%s", typ, n, k.Name()), func(b *testing.B) {
			fastest := time.Duration(math.MaxInt64)
			for b.Loop() {
				t0 := time.Now()
				k.VecDotTile(typ, rows, rs, nrows, acts, as, nacts, n, out, nrows)
				fastest = min(fastest, time.Since(t0))
			}
			b.ReportMetric(float64(fastest.Nanoseconds())/(nrows*nacts), "ns/pair")
		})
		b.Run(fmt.Sprintf("%s/n=%d/rows/%s", typ, n, k.Name()), func(b *testing.B) {
			fastest := time.Duration(math.MaxInt64)
			for b.Loop() {
				t0 := time.Now()
				for a := 0; a < nacts; a++ {
					k.VecDotRows(typ, rows, rs, acts[a*as:(a+1)*as], n, out[a*nrows:(a+1)*nrows])
				}
				fastest = min(fastest, time.Since(t0))
			}
			b.ReportMetric(float64(fastest.Nanoseconds())/(nrows*nacts), "ns/pair")
		})
	}
}

// benchTileOperands is nrows distinct Gaussian weight rows and nacts
// activation rows, packed.
func benchTileOperands(b *testing.B, typ Type, n, nrows, nacts int) (rows []byte, rowStride int, acts []byte, actStride int) {
	b.Helper()
	var rs, as [][]byte
	for i := 0; i < max(nrows, nacts); i++ {
		row, act := benchOperandsSeed(b, typ, n, uint64(i))
		rs, as = append(rs, row), append(as, act)
	}
	return bytes.Join(rs[:nrows], nil), len(rs[0]), bytes.Join(as[:nacts], nil), len(as[0])
}

// benchOperandsSeed is a Gaussian weight row of typ and an activation row
// in its vec-dot type, drawn from the stream seed.
func benchOperandsSeed(b *testing.B, typ Type, n int, seed uint64) (row, act []byte) {
	b.Helper()
	r := rand.New(rand.NewPCG(seed, 2))
	row, err := Quantize(typ, gaussian(r, n, 0.05))
	if err != nil {
		b.Fatal(err)
	}
	ab, _ := RowBytes(VecDotType(typ), int64(n))
	act = make([]byte, ab)
	if err := QuantizeAct(typ, gaussian(r, n, 1), act); err != nil {
		b.Fatal(err)
	}
	return row, act
}
