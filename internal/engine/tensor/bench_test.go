package tensor

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchN is a typical hidden size; b.SetBytes counts the weight row bytes,
// so MB/s is weight-streaming throughput.
const benchN = 4096

func benchRow(b *testing.B, typ Type) ([]byte, []float32, []byte) {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	row, err := Quantize(typ, gaussian(r, benchN, 0.05))
	if err != nil {
		b.Fatal(err)
	}
	x := gaussian(r, benchN, 1)
	ab, _ := RowBytes(VecDotType(typ), benchN)
	act := make([]byte, ab)
	if err := QuantizeAct(typ, x, act); err != nil {
		b.Fatal(err)
	}
	return row, x, act
}

func BenchmarkDotF32(b *testing.B) {
	k := Best()
	for _, typ := range dotTypes {
		b.Run(typ.String(), func(b *testing.B) {
			row, x, _ := benchRow(b, typ)
			b.SetBytes(int64(len(row)))
			var sink float32
			for b.Loop() {
				sink += k.DotF32(typ, row, x)
			}
			_ = sink
			b.ReportMetric(float64(b.N)*benchN/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}

// benchKernels is the generic set plus every SIMD path this machine runs,
// so one benchmark run shows them side by side.
func benchKernels() []Kernels {
	ks := []Kernels{Generic()}
	have := cpuFeatures()
	for _, p := range kernelPaths {
		if haveArchKernels && missingFeatures(have, p.f) == "" {
			ks = append(ks, Select(p.f, false))
		}
	}
	return ks
}

// benchOperands is a Gaussian weight row of typ and an activation row in
// its vec-dot type, from stream 1 (benchOperandsSeed).
func benchOperands(b *testing.B, typ Type, n int) (row, act []byte) {
	b.Helper()
	return benchOperandsSeed(b, typ, n, 1)
}

// BenchmarkVecDot measures one row against one activation row through the
// public VecDot (size checks included), for every kernel set. MB/s and
// GB/s count the weight bytes read.
func BenchmarkVecDot(b *testing.B) {
	for _, typ := range dotTypes {
		for _, n := range []int{2048, 8192} {
			row, act := benchOperands(b, typ, n)
			for _, k := range benchKernels() {
				b.Run(fmt.Sprintf("%s/n=%d/%s", typ, n, k.Name()), func(b *testing.B) {
					b.SetBytes(int64(len(row)))
					var sink float32
					for b.Loop() {
						sink += k.VecDot(typ, row, act, n)
					}
					_ = sink
					b.ReportMetric(float64(b.N)*float64(len(row))/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		}
	}
}

func BenchmarkQuantizeAct(b *testing.B) {
	k := Best()
	for _, typ := range []Type{F16, Q8_0, Q4_1, Q4_K} {
		b.Run(VecDotType(typ).String(), func(b *testing.B) {
			_, x, act := benchRow(b, typ)
			b.SetBytes(benchN * 4)
			for b.Loop() {
				if err := k.QuantizeAct(typ, x, act); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDequantize(b *testing.B) {
	k := Best()
	for _, typ := range dotTypes {
		b.Run(typ.String(), func(b *testing.B) {
			row, _, _ := benchRow(b, typ)
			dst := make([]float32, benchN)
			b.SetBytes(int64(len(row)))
			for b.Loop() {
				if err := k.Dequantize(typ, row, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVecDotRows compares 64 rows through VecDotRows with the same rows
// through VecDot one at a time: the difference is the per-call size checks.
func BenchmarkVecDotRows(b *testing.B) {
	const n, nrows = 2048, 64
	k := Best()
	for _, typ := range []Type{F16, Q8_0, Q4_K, Q5_K, Q6_K} {
		row, act := benchOperands(b, typ, n)
		rows := bytes.Repeat(row, nrows)
		out := make([]float32, nrows)
		b.Run(typ.String()+"/rows/"+k.Name(), func(b *testing.B) {
			b.SetBytes(int64(len(rows)))
			for b.Loop() {
				k.VecDotRows(typ, rows, len(row), act, n, out)
			}
		})
		b.Run(typ.String()+"/loop/"+k.Name(), func(b *testing.B) {
			b.SetBytes(int64(len(rows)))
			for b.Loop() {
				for r := range out {
					out[r] = k.VecDot(typ, rows[r*len(row):(r+1)*len(row)], act, n)
				}
			}
		})
	}
}

// BenchmarkVecDotTile multiplies 64 weight rows with 64 activation rows
// (n = 2048) through VecDotTile and, for comparison, through VecDotRows one
// activation row at a time, the same results. GMAC/s counts the
// multiply-adds; cpu-ns/MAC is not reported, so compare the two side by side
// in one run.
func BenchmarkVecDotTile(b *testing.B) {
	const n, nrows, nacts = 2048, 64, 64
	k := Best()
	for _, typ := range []Type{Q8_0, Q4_0, Q4_K, Q5_K, Q6_K} {
		row, act := benchOperands(b, typ, n)
		rows, acts := bytes.Repeat(row, nrows), bytes.Repeat(act, nacts)
		out := make([]float32, nrows*nacts)
		report := func(b *testing.B) {
			b.ReportMetric(float64(n*nrows*nacts)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		}
		b.Run(typ.String()+"/tile/"+k.Name(), func(b *testing.B) {
			for b.Loop() {
				k.VecDotTile(typ, rows, len(row), nrows, acts, len(act), nacts, n, out, nrows)
			}
			report(b)
		})
		b.Run(typ.String()+"/rows/"+k.Name(), func(b *testing.B) {
			for b.Loop() {
				for a := 0; a < nacts; a++ {
					k.VecDotRows(typ, rows, len(row), acts[a*len(act):(a+1)*len(act)], n, out[a*nrows:(a+1)*nrows])
				}
			}
			report(b)
		})
	}
}

// BenchmarkDotF32Tile times the attention's values (64 fp16 rows of a
// 1024-position span, as one head of a long prompt) for one query and for
// six queries per call; bytes are the value rows read per query, so MB/s
// compares the two directly.
func BenchmarkDotF32Tile(b *testing.B) {
	const span, nrows, stride = 1024, 64, 2 * 1040
	r := rand.New(rand.NewPCG(3, 4))
	rows := make([]byte, (nrows-1)*stride+2*span)
	for i := 0; i < nrows; i++ {
		row, _ := Quantize(F16, gaussian(r, span, 1))
		copy(rows[i*stride:], row)
	}
	x := gaussian(r, 6*span, 1)
	out := make([]float32, 6*nrows)
	for _, m := range []int{1, 6} {
		lens := make([]int, m)
		for i := range lens {
			lens[i] = span - m + 1 + i
		}
		for _, k := range []Kernels{Generic(), Best()} {
			b.Run(fmt.Sprintf("queries=%d/%s", m, k.Name()), func(b *testing.B) {
				b.SetBytes(int64(m * 2 * span * nrows))
				for b.Loop() {
					k.DotF32Tile(F16, rows, stride, nrows, x, span, lens, out, nrows)
				}
			})
		}
	}
}
