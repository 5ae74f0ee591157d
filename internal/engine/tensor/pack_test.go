package tensor

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// packedKernels returns Best() when it packs t, and skips the test with
// the reason when it does not.
func packedKernels(tb testing.TB, t Type) Kernels {
	tb.Helper()
	k := Best()
	if k.PackRows(t) == 0 {
		tb.Skipf("the %s kernels do not pack %s (only AVX2 does)", k.Name(), t)
	}
	return k
}

// mxfp4x8Ref is the packed kernels' sum of one unpacked MXFP4 row with a
// Q8_0 activation row, spelled out: block by block, acc ← acc + float(Σ
// v·y) × (e8m0Half(e) × fp16(d)), the product of the scales rounded to
// float32 and the multiply-add rounded once (exact in big.Float, then
// rounded to the nearest float32, subnormals included).
func mxfp4x8Ref(row, act []byte, nb int) float32 {
	var acc float32
	for b := range nb {
		w, y := row[17*b:17*b+17], act[34*b:34*b+34]
		var isum int64
		for j := range 16 {
			isum += int64(kvaluesMXFP4[w[1+j]&0xf]) * int64(int8(y[2+j]))
			isum += int64(kvaluesMXFP4[w[1+j]>>4]) * int64(int8(y[2+j+16]))
		}
		acc = fmaRound(acc, isum, float32(e8m0Half(w[0])*F16ToF32(uint16(y[0])|uint16(y[1])<<8)))
	}
	return acc
}

// fmaRound is acc + isum·d computed exactly and rounded once to the
// nearest float32 (subnormals included): one FMA of the kernels.
func fmaRound(acc float32, isum int64, d float32) float32 {
	p := new(big.Float).SetPrec(200).SetInt64(isum)
	p.Mul(p, new(big.Float).SetPrec(200).SetFloat64(float64(d)))
	p.Add(p, new(big.Float).SetPrec(200).SetFloat64(float64(acc)))
	f, _ := p.Float32()
	return f
}

// q8x8Ref is the packed Q8_0 kernels' sum of one unpacked row with a Q8_0
// activation row, in their order: block by block, acc ← acc + float(Σ w·y)
// × (fp16(d_w) × fp16(d_y)), the product of the scales rounded to float32
// and the multiply-add rounded once.
func q8x8Ref(row, act []byte, nb int) float32 {
	var acc float32
	for b := range nb {
		w, y := row[34*b:34*b+34], act[34*b:34*b+34]
		var isum int64
		for j := range 32 {
			isum += int64(int8(w[2+j])) * int64(int8(y[2+j]))
		}
		acc = fmaRound(acc, isum, float32(F16ToF32(uint16(w[0])|uint16(w[1])<<8)*F16ToF32(uint16(y[0])|uint16(y[1])<<8)))
	}
	return acc
}

// q4x8Ref is q8x8Ref for a Q4_0 row: Σ (q−8)·y per block.
func q4x8Ref(row, act []byte, nb int) float32 {
	var acc float32
	for b := range nb {
		w, y := row[18*b:18*b+18], act[34*b:34*b+34]
		var isum int64
		for j := range 16 {
			isum += int64(int(w[2+j]&0xf)-8) * int64(int8(y[2+j]))
			isum += int64(int(w[2+j]>>4)-8) * int64(int8(y[2+j+16]))
		}
		acc = fmaRound(acc, isum, float32(F16ToF32(uint16(w[0])|uint16(w[1])<<8)*F16ToF32(uint16(y[0])|uint16(y[1])<<8)))
	}
	return acc
}

// q8PackOperands draws rows of nb blocks of typ (Q8_0 or Q4_0), a third
// of them with extreme quants (Q8_0 −128 and 127, Q4_0 0 and 15: the
// widest products VPMADDUBSW sees), and nacts Q8_0 activations.
func q8PackOperands(tb testing.TB, typ Type, rows, nb, nacts int, seed uint64) (w, acts []byte) {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 9))
	bb := typ.BlockBytes()
	w = make([]byte, 0, rows*nb*bb)
	for i := range rows {
		x := make([]float32, 32*nb)
		for j := range x {
			x[j] = float32(r.NormFloat64()) * 0.05
		}
		q, err := Quantize(typ, x)
		if err != nil {
			tb.Fatal(err)
		}
		if i%3 == 0 {
			for b := range nb {
				for j := 2; j < bb; j++ {
					q[b*bb+j] = map[Type][]byte{Q8_0: {0x80, 0x7f}, Q4_0: {0x00, 0xff, 0x0f, 0xf0}}[typ][r.IntN(2)]
				}
			}
		}
		w = append(w, q...)
	}
	return w, q8Acts(tb, r, nb, nacts)
}

// q8Acts draws nacts Gaussian activation rows of nb Q8_0 blocks.
func q8Acts(tb testing.TB, r *rand.Rand, nb, nacts int) []byte {
	tb.Helper()
	acts := make([]byte, nacts*nb*34)
	for a := range nacts {
		x := make([]float32, 32*nb)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		if err := QuantizeAct(Q8_0, x, acts[a*nb*34:(a+1)*nb*34]); err != nil {
			tb.Fatal(err)
		}
	}
	return acts
}

// TestPackedQ8MatchesReference checks the packed Q8_0 and Q4_0 kernels
// (1 to 4 activations at once, and more in fours) against the spelled-out
// sum order, bit for bit, and against the unpacked kernels, closely.
func TestPackedQ8MatchesReference(t *testing.T) {
	for typ, ref := range map[Type]func(row, act []byte, nb int) float32{Q8_0: q8x8Ref, Q4_0: q4x8Ref} {
		t.Run(typ.String(), func(t *testing.T) { packedQ8MatchesReference(t, typ, ref) })
	}
}

func packedQ8MatchesReference(t *testing.T, typ Type, ref func(row, act []byte, nb int) float32) {
	k := packedKernels(t, typ)
	for _, tc := range []struct{ groups, nb, nacts int }{
		{1, 1, 1}, {1, 2, 2}, {2, 3, 3}, {3, 32, 4}, {1, 64, 5}, {2, 7, 7}, {1, 5, 9},
	} {
		t.Run(fmt.Sprintf("groups=%d/nb=%d/acts=%d", tc.groups, tc.nb, tc.nacts), func(t *testing.T) {
			rows, n, ab, rb := 8*tc.groups, 32*tc.nb, 34*tc.nb, typ.BlockBytes()*tc.nb
			w, acts := q8PackOperands(t, typ, rows, tc.nb, tc.nacts, uint64(rows*1000+tc.nb))
			packed := make([]byte, len(w))
			if err := k.Pack(typ, w, rows, n, packed); err != nil {
				t.Fatal(err)
			}
			outStride := rows + 3
			out := make([]float32, tc.nacts*outStride)
			k.VecDotPacked(typ, packed, rows, acts, ab, tc.nacts, n, out, outStride)
			for a := range tc.nacts {
				for r := range rows {
					row := w[r*rb : (r+1)*rb]
					want := ref(row, acts[a*ab:(a+1)*ab], tc.nb)
					if got := out[a*outStride+r]; math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("row %d, act %d: %v, reference %v", r, a, got, want)
					}
					one := k.VecDot(typ, row, acts[a*ab:(a+1)*ab], n)
					if d := math.Abs(float64(one - want)); d > 1e-5*math.Max(1, math.Abs(float64(want))) {
						t.Errorf("row %d, act %d: packed %v, unpacked %v", r, a, want, one)
					}
				}
				for r := rows; r < outStride && a+1 < tc.nacts; r++ {
					if out[a*outStride+r] != 0 {
						t.Fatalf("act %d: out[%d] past the rows was written", a, r)
					}
				}
			}
		})
	}
}

// packOperands draws rows of nb MXFP4 blocks (exponents from the
// subnormal scales to far above real weights', short of overflowing a
// sum) and nacts Q8_0 activation rows.
func packOperands(tb testing.TB, rows, nb, nacts int, seed uint64) (w, acts []byte) {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	w = make([]byte, rows*nb*17)
	exps := []byte{0, 1, 2, 3, 100, 118, 120, 127, 130, 160}
	for i := range rows * nb {
		blk := w[17*i : 17*i+17]
		blk[0] = exps[r.IntN(len(exps))]
		for j := 1; j < 17; j++ {
			blk[j] = byte(r.Uint32())
		}
	}
	return w, q8Acts(tb, r, nb, nacts)
}

func TestPackedMXFP4MatchesReference(t *testing.T) {
	k := packedKernels(t, MXFP4)
	for _, tc := range []struct{ groups, nb, nacts int }{
		{1, 1, 1}, {1, 2, 3}, {2, 3, 1}, {3, 90, 2}, {1, 256, 5}, {4, 7, 4},
	} {
		t.Run(fmt.Sprintf("groups=%d/nb=%d/acts=%d", tc.groups, tc.nb, tc.nacts), func(t *testing.T) {
			rows, n := 8*tc.groups, 32*tc.nb
			w, acts := packOperands(t, rows, tc.nb, tc.nacts, uint64(rows*1000+tc.nb))
			packed := make([]byte, len(w))
			if err := k.Pack(MXFP4, w, rows, n, packed); err != nil {
				t.Fatal(err)
			}
			ab := tc.nb * 34
			out := make([]float32, tc.nacts*rows)
			k.VecDotPacked(MXFP4, packed, rows, acts, ab, tc.nacts, n, out, rows)
			for a := range tc.nacts {
				for r := range rows {
					want := mxfp4x8Ref(w[r*tc.nb*17:(r+1)*tc.nb*17], acts[a*ab:(a+1)*ab], tc.nb)
					if got := out[a*rows+r]; math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("row %d, act %d: %v (%#x), reference %v (%#x)", r, a, got, math.Float32bits(got), want, math.Float32bits(want))
					}
					// The unpacked kernels sum in another order: close, not equal.
					one := k.VecDot(MXFP4, w[r*tc.nb*17:(r+1)*tc.nb*17], acts[a*ab:(a+1)*ab], n)
					if d := math.Abs(float64(one - want)); d > 1e-5*math.Max(1, math.Abs(float64(want))) {
						t.Errorf("row %d, act %d: packed %v, unpacked %v", r, a, want, one)
					}
				}
			}
		})
	}
}

// TestPackedMXFP4SplitsAgree multiplies the same packed rows and
// activations whole and cut into single groups and single activations: a
// matmul may split its rows and tokens any way and get the same bits.
func TestPackedMXFP4SplitsAgree(t *testing.T) {
	k := packedKernels(t, MXFP4)
	const groups, nb, nacts = 5, 36, 6
	rows, n, ab := 8*groups, 32*nb, 34*nb
	w, acts := packOperands(t, rows, nb, nacts, 42)
	packed := make([]byte, len(w))
	if err := k.Pack(MXFP4, w, rows, n, packed); err != nil {
		t.Fatal(err)
	}
	whole := make([]float32, nacts*rows)
	k.VecDotPacked(MXFP4, packed, rows, acts, ab, nacts, n, whole, rows)
	cut := make([]float32, nacts*rows)
	gb := 8 * nb * 17
	for g := range groups {
		for a := range nacts {
			k.VecDotPacked(MXFP4, packed[g*gb:(g+1)*gb], 8, acts[a*ab:], ab, 1, n, cut[a*rows+8*g:], rows)
		}
	}
	for i := range whole {
		if math.Float32bits(whole[i]) != math.Float32bits(cut[i]) {
			t.Fatalf("result %d: whole %v, cut %v", i, whole[i], cut[i])
		}
	}
}

// TestPackedQ8SplitsAgree is TestPackedMXFP4SplitsAgree for Q8_0 and
// Q4_0, whose kernels differ by activation count: one activation at a
// time must give the bits of four, three and two at once.
func TestPackedQ8SplitsAgree(t *testing.T) {
	for _, typ := range []Type{Q8_0, Q4_0} {
		t.Run(typ.String(), func(t *testing.T) {
			k := packedKernels(t, typ)
			const groups, nb, nacts = 3, 20, 7
			rows, n, ab := 8*groups, 32*nb, 34*nb
			w, acts := q8PackOperands(t, typ, rows, nb, nacts, 43)
			packed := make([]byte, len(w))
			if err := k.Pack(typ, w, rows, n, packed); err != nil {
				t.Fatal(err)
			}
			whole := make([]float32, nacts*rows)
			k.VecDotPacked(typ, packed, rows, acts, ab, nacts, n, whole, rows)
			cut := make([]float32, nacts*rows)
			gb := 8 * typ.BlockBytes() * nb
			for g := range groups {
				for a := range nacts {
					k.VecDotPacked(typ, packed[g*gb:(g+1)*gb], 8, acts[a*ab:], ab, 1, n, cut[a*rows+8*g:], rows)
				}
			}
			for i := range whole {
				if math.Float32bits(whole[i]) != math.Float32bits(cut[i]) {
					t.Fatalf("result %d: whole %v, cut %v", i, whole[i], cut[i])
				}
			}
		})
	}
}

func TestPackErrors(t *testing.T) {
	k := packedKernels(t, MXFP4)
	w := make([]byte, 8*17)
	var se *SizeError
	if err := k.Pack(MXFP4, w[:7*17], 7, 32, make([]byte, 7*17)); err == nil {
		t.Error("7 rows packed into groups of 8")
	}
	if err := k.Pack(MXFP4, w, 8, 32, make([]byte, 10)); !errors.As(err, &se) {
		t.Errorf("short destination: %v, want a *SizeError", err)
	}
	if err := k.Pack(MXFP4, w, 8, 30, make([]byte, len(w))); !errors.As(err, &se) {
		t.Errorf("30-element rows: %v, want a *SizeError", err)
	}
	var ue *UnsupportedError
	if err := k.Pack(Q4_K, make([]byte, 8*144), 8, 256, make([]byte, 8*144)); !errors.As(err, &ue) {
		t.Errorf("Q4_K: %v, want an *UnsupportedError", err)
	}
	if g := Generic().PackRows(MXFP4); g != 0 {
		t.Errorf("the generic kernels pack MXFP4 into groups of %d", g)
	}
}

// BenchmarkVecDotPacked times a decode step's product over MXFP4 rows
// packed and as stored (the one-row kernel through VecDotTile), in ns per
// row from the fastest pass: 64 rows stay in cache, 16384 stream from
// memory.
func BenchmarkVecDotPacked(b *testing.B) {
	k := packedKernels(b, MXFP4)
	for _, n := range []int{1024, 2880} {
		for _, rows := range []int{64, 16384} {
			nb := n / 32
			w, act := packOperands(b, rows, nb, 1, 3)
			packed := make([]byte, len(w))
			if err := k.Pack(MXFP4, w, rows, n, packed); err != nil {
				b.Fatal(err)
			}
			out := make([]float32, rows)
			for _, packedRun := range []bool{false, true} {
				name := "stored"
				if packedRun {
					name = "packed"
				}
				b.Run(fmt.Sprintf("n=%d/rows=%d/%s", n, rows, name), func(b *testing.B) {
					fastest := time.Duration(math.MaxInt64)
					for b.Loop() {
						t0 := time.Now()
						if packedRun {
							k.VecDotPacked(MXFP4, packed, rows, act, len(act), 1, n, out, rows)
						} else {
							k.VecDotTile(MXFP4, w, nb*17, rows, act, len(act), 1, n, out, rows)
						}
						fastest = min(fastest, time.Since(t0))
					}
					b.ReportMetric(float64(fastest.Nanoseconds())/float64(rows), "ns/row")
				})
			}
		}
	}
}

// BenchmarkPack times packing MXFP4 rows at load, in MB/s of weights.
func BenchmarkPack(b *testing.B) {
	k := packedKernels(b, MXFP4)
	const rows, n = 2880, 2880
	w, _ := packOperands(b, rows, n/32, 1, 5)
	dst := make([]byte, len(w))
	b.SetBytes(int64(len(w)))
	for b.Loop() {
		if err := k.Pack(MXFP4, w, rows, n, dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPackedQ8_0 times Q8_0 rows packed against as stored: a decode
// step's product (one activation; 64 rows stay in cache, 16384 stream
// from memory), ns per row, and a prefill tile (64 rows × 64 activations,
// the stored rows through the 4×4 register tiles), ns per pair; fastest
// pass.
func BenchmarkPackedQ8_0(b *testing.B) {
	k := packedKernels(b, Q8_0)
	fastest := func(b *testing.B, per int, f func()) {
		best := time.Duration(math.MaxInt64)
		for b.Loop() {
			t0 := time.Now()
			f()
			best = min(best, time.Since(t0))
		}
		b.ReportMetric(float64(best.Nanoseconds())/float64(per), "ns/op-unit")
	}
	for _, n := range []int{1024, 2048} {
		nb, ab := n/32, n/32*34
		for _, rows := range []int{64, 16384} {
			w, act := q8PackOperands(b, Q8_0, rows, nb, 1, 4)
			packed := make([]byte, len(w))
			if err := k.Pack(Q8_0, w, rows, n, packed); err != nil {
				b.Fatal(err)
			}
			out := make([]float32, rows)
			b.Run(fmt.Sprintf("decode/n=%d/rows=%d/stored", n, rows), func(b *testing.B) {
				fastest(b, rows, func() { k.VecDotTile(Q8_0, w, ab, rows, act, ab, 1, n, out, rows) })
			})
			b.Run(fmt.Sprintf("decode/n=%d/rows=%d/packed", n, rows), func(b *testing.B) {
				fastest(b, rows, func() { k.VecDotPacked(Q8_0, packed, rows, act, ab, 1, n, out, rows) })
			})
		}
		const rows, nacts = 64, 64
		w, acts := q8PackOperands(b, Q8_0, rows, nb, nacts, 5)
		packed := make([]byte, len(w))
		if err := k.Pack(Q8_0, w, rows, n, packed); err != nil {
			b.Fatal(err)
		}
		out := make([]float32, rows*nacts)
		b.Run(fmt.Sprintf("prefill/n=%d/stored", n), func(b *testing.B) {
			fastest(b, rows*nacts, func() { k.VecDotTile(Q8_0, w, ab, rows, acts, ab, nacts, n, out, rows) })
		})
		b.Run(fmt.Sprintf("prefill/n=%d/packed", n), func(b *testing.B) {
			fastest(b, rows*nacts, func() { k.VecDotPacked(Q8_0, packed, rows, acts, ab, nacts, n, out, rows) })
		})
	}
}
