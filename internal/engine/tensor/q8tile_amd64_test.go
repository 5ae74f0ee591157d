//go:build amd64 && !purego

package tensor

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// avx2Kernels returns the AVX2 table, skipping where the CPU lacks it.
func avx2Kernels(tb testing.TB) Kernels {
	tb.Helper()
	f := Features{AVX2: true, FMA: true, F16C: true}
	if missing := missingFeatures(cpuFeatures(), f); missing != "" {
		tb.Skipf("this CPU lacks %s", missing)
	}
	return Select(f, false)
}

// TestQ8TileAVX2 checks the AVX2 Q8_0 and Q4_0 tiles and rows kernels on
// every shape around their 4×4, 4×2 and 4×1 register tiles (rows 1..9 against
// activations 1..9), one to many blocks, padded strides and the integer
// extremes: every output is bit for bit the one-row kernel's for its pair,
// and nothing outside the tile is written.
func TestQ8TileAVX2(t *testing.T) {
	k := avx2Kernels(t)
	r := rand.New(rand.NewPCG(41, 42))
	const guard = 0x7fc0dead // a NaN no kernel produces
	for _, typ := range []Type{Q8_0, Q4_0} {
		one := map[Type]VecDotFunc{Q8_0: vecDotQ8_0AVX2, Q4_0: vecDotQ4_0AVX2}[typ]
		for _, nb := range []int{1, 2, 3, 4, 17, 64} {
			n := 32 * nb
			for nrows := 1; nrows <= 9; nrows++ {
				for nacts := 1; nacts <= 9; nacts++ {
					extreme := (nrows+nacts)%2 == 0
					rows, rs, acts, as := tileOperands(r, typ, n, nrows, nacts, r.IntN(5), extreme)
					rb, ab := len(rows)-(nrows-1)*rs, len(acts)-(nacts-1)*as
					outStride := nrows + r.IntN(3)
					tile := make([]float32, (nacts-1)*outStride+nrows+2)
					for i := range tile {
						tile[i] = math.Float32frombits(guard)
					}
					k.VecDotTile(typ, rows, rs, nrows, acts, as, nacts, n, tile, outStride)
					byRows := make([]float32, nrows)
					for a := 0; a < nacts; a++ {
						act := acts[a*as : a*as+ab]
						k.VecDotRows(typ, rows, rs, act, n, byRows)
						for rr := 0; rr < nrows; rr++ {
							want := math.Float32bits(one(rows[rr*rs:rr*rs+rb], act, n))
							if got := math.Float32bits(tile[a*outStride+rr]); got != want {
								t.Fatalf("%s n=%d %dx%d row %d act %d: tile %#x, one-row %#x", typ, n, nrows, nacts, rr, a, got, want)
							}
							if got := math.Float32bits(byRows[rr]); got != want {
								t.Fatalf("%s n=%d %d rows, row %d act %d: rows %#x, one-row %#x", typ, n, nrows, rr, a, got, want)
							}
						}
						for rr := nrows; rr < outStride && a*outStride+rr < len(tile); rr++ {
							if math.Float32bits(tile[a*outStride+rr]) != guard {
								t.Fatalf("%s n=%d %dx%d: out[%d] outside the tile was written", typ, n, nrows, nacts, a*outStride+rr)
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkQ8TileAVX2 compares the AVX2 Q8_0 and Q4_0 tiles with the
// one-row kernel looped over the same pairs (64 rows, n = 2048, against 3,
// 8 and 64 activations; three take a 4×2 and a 4×1 tile), alternating the
// two in each iteration so a noisy machine slows both alike; tile/loop is
// the ratio of their thread CPU times.
func BenchmarkQ8TileAVX2(b *testing.B) {
	k := avx2Kernels(b)
	const n, nrows = 2048, 64
	for _, typ := range []Type{Q8_0, Q4_0} {
		one := map[Type]VecDotFunc{Q8_0: vecDotQ8_0AVX2, Q4_0: vecDotQ4_0AVX2}[typ]
		for _, nacts := range []int{3, 8, 64} {
			row, act := benchOperands(b, typ, n)
			rows, acts := bytes.Repeat(row, nrows), bytes.Repeat(act, nacts)
			out := make([]float32, nrows*nacts)
			b.Run(fmt.Sprintf("%s/acts=%d", typ, nacts), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var tile, loop float64
				for b.Loop() {
					t0 := nanotime()
					k.VecDotTile(typ, rows, len(row), nrows, acts, len(act), nacts, n, out, nrows)
					t1 := nanotime()
					for a := 0; a < nacts; a++ {
						ac := acts[a*len(act) : (a+1)*len(act)]
						for r := 0; r < nrows; r++ {
							out[a*nrows+r] = one(rows[r*len(row):(r+1)*len(row)], ac, n)
						}
					}
					tile += float64(t1 - t0)
					loop += float64(nanotime() - t1)
				}
				macs := float64(n*nrows*nacts) * float64(b.N)
				b.ReportMetric(macs/tile, "tileGMAC/s")
				b.ReportMetric(macs/loop, "loopGMAC/s")
				b.ReportMetric(tile/loop, "tile/loop")
			})
		}
	}
}

// BenchmarkVecDotOneRow times the AVX2 one-row Q8_0 and Q4_0 kernels
// called directly, 64 rows against one activation row, as
// bench/vecdotbench.c times ggml's vec_dot (ns/row of the fastest pass).
func BenchmarkVecDotOneRow(b *testing.B) {
	const nrows = 64
	if f := cpuFeatures(); !f.AVX2 || !f.FMA || !f.F16C {
		b.Skip("this CPU lacks AVX2, FMA or F16C")
	}
	for _, c := range []struct {
		typ Type
		fn  VecDotFunc
	}{{Q8_0, vecDotQ8_0AVX2}, {Q4_0, vecDotQ4_0AVX2}} {
		for _, n := range []int{2048, 8192} {
			row, act := benchOperands(b, c.typ, n)
			rows := bytes.Repeat(row, nrows)
			b.Run(fmt.Sprintf("%s/n=%d", c.typ, n), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var sink float32
				t0 := nanotime()
				for b.Loop() {
					for r := 0; r < nrows; r++ {
						sink += c.fn(rows[r*len(row):(r+1)*len(row)], act, n)
					}
				}
				_ = sink
				b.ReportMetric(float64(nanotime()-t0)/float64(b.N*nrows), "cpu-ns/row")
			})
		}
	}
}

// BenchmarkQ8Decode times decode's path through the AVX2 table, one
// activation against 64 rows (in cache) and 2048 rows (4.4 MB of Q8_0,
// streamed from memory), n = 2048, in thread CPU time per row.
func BenchmarkQ8Decode(b *testing.B) {
	k := avx2Kernels(b)
	const n = 2048
	for _, typ := range []Type{Q8_0, Q4_0} {
		for _, nrows := range []int{64, 2048} {
			row, act := benchOperands(b, typ, n)
			rows := bytes.Repeat(row, nrows)
			out := make([]float32, nrows)
			b.Run(fmt.Sprintf("%s/rows=%d", typ, nrows), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				t0 := nanotime()
				for b.Loop() {
					k.VecDotTile(typ, rows, len(row), nrows, act, len(act), 1, n, out, nrows)
				}
				b.ReportMetric(float64(nanotime()-t0)/float64(b.N*nrows), "cpu-ns/row")
			})
		}
	}
}

// nanotime is the calling thread's CPU time in nanoseconds
// (CLOCK_THREAD_CPUTIME_ID): on a machine shared with other work it counts
// only the time this thread ran, so the benchmarks lock their goroutine to
// its thread and time with it.
func nanotime() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic(e)
	}
	return ts.Nano()
}
