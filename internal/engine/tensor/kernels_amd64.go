//go:build amd64 && !purego

package tensor

//go:generate sh -c "python3 gen_ftile.py > vecdot_ftile_amd64.s"
//go:generate sh -c "python3 gen_vtile.py > vecdot_vtile_amd64.s"
//go:generate sh -c "python3 gen_vtile.py go > vtile_amd64.go"

import "slices"

// AVX2 kernels (vecdot_amd64.s). Each computes what the generic function of
// the same name without the suffix computes (vecdot.go, dot.go): the same
// exact integer sums per block, with the float accumulation spread over
// vector lanes, so results differ from the generic ones only by float
// rounding. They trust their caller to have checked the sizes (CheckDot): row
// and act hold exactly n elements of their types. The Q8_0 kernel also relies
// on activations from QuantizeAct, whose quants lie in [−127, 127], and the
// Q6_K kernel on Q8_K activations whose bsums are the sums of their quants.

//go:noescape
func vecDotF32AVX2(row, act []byte, n int) float32

//go:noescape
func vecDotF16AVX2(row, act []byte, n int) float32

//go:noescape
func vecDotBF16AVX2(row, act []byte, n int) float32

// dotF16F32AVX2 is dotF32 for F16 rows: len(row) is 2·len(x).
//
//go:noescape
func dotF16F32AVX2(row []byte, x []float32) float32

// dotF16F32Tile is the DotF32TileFunc of F16 rows: the queries in groups
// of up to six, each group's rows by its kernel's step, the rows left over
// one by one. Every result is the same one-accumulator sum whichever
// kernel computes it (vecdot_vtile_amd64.s), so groupings do not matter.
func dotF16F32Tile(rows []byte, stride, nrows int, x []float32, xStride int, lens []int, out []float32, outStride int) {
	for i0 := 0; i0 < len(lens); i0 += vtileQueries {
		ls := lens[i0:min(i0+vtileQueries, len(lens))]
		m := len(ls)
		c0 := slices.Min(ls) / 8
		var tails [vtileQueries]int
		for i, n := range ls {
			tails[i] = n - 8*c0
		}
		xs, os := &x[i0*xStride], &out[i0*outStride]
		full := nrows - nrows%vtileRows(m)
		if full > 0 {
			vtile(m, &rows[0], stride, full, xs, 4*xStride, &tails[0], c0, os, 4*outStride)
		}
		for i, n := range ls {
			tail := n % 8
			for r := full; r < nrows; r++ {
				dotF16F32Tile1x1AVX2(&rows[r*stride], stride, 1, &x[(i0+i)*xStride], 0, &tail, n/8, &out[(i0+i)*outStride+r], 0)
			}
		}
	}
}

// vecDotF16RowsAVX512 (AVX-512F) computes out[r] = vecDotF16AVX2(row r,
// act, n) for r < nrows, rows rowStride bytes apart, bit for bit.
//
//go:noescape
func vecDotF16RowsAVX512(rows *byte, rowStride, nrows int, act *byte, n int, out *float32)

//go:noescape
func vecDotQ8_0AVX2(row, act []byte, n int) float32

//go:noescape
func vecDotQ4_0AVX2(row, act []byte, n int) float32

// AVX512_VNNI (with AVX512VL, on ymm registers) variants of the AVX2 int8
// kernels: VPDPBUSD does the multiply and both pairwise additions at once.

//go:noescape
func vecDotQ8_0VNNI(row, act []byte, n int) float32

//go:noescape
func vecDotQ4_0VNNI(row, act []byte, n int) float32

// vecDotQ8_0RowsVNNI (AVX-512 BW and VNNI) computes out[r] =
// vecDotQ8_0VNNI(row r, act, n) for r < nrows, rows rowStride bytes apart,
// bit for bit.
//
//go:noescape
func vecDotQ8_0RowsVNNI(rows *byte, rowStride, nrows int, act *byte, n int, out *float32)

// vecDotQ8_0Tile4VNNI (vecdot_tile_amd64.s) computes the 4×4 block
// out[a·outStride+r] = vecDotQ8_0VNNI(row r, act a, 32·nb) of rows rowStride
// bytes apart and activations actStride bytes apart, bit for bit.
//
//go:noescape
func vecDotQ8_0Tile4VNNI(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

// vecDotF32Tile43AVX512 (vecdot_ftile_amd64.s) computes the 4×3 block
// out[a·outStride+r] = vecDotF32AVX2(row r, act a, n) of rows rowStride
// bytes apart and activations actStride bytes apart, bit for bit, on
// AVX-512F registers holding two of the one-row kernel's accumulators each.
//
//go:noescape
func vecDotF32Tile43AVX512(rows *byte, rowStride int, acts *byte, actStride int, n int, out *float32, outStride int)

// vecDotF16Tile43AVX512 is vecDotF32Tile43AVX512 for F16 rows and
// activations, bit for bit vecDotF16AVX2 per pair: each row and activation
// chunk is converted once per tile instead of once per pair.
//
//go:noescape
func vecDotF16Tile43AVX512(rows *byte, rowStride int, acts *byte, actStride int, n int, out *float32, outStride int)

// vecDotQ4_0Tile4VNNI is vecDotQ8_0Tile4VNNI for Q4_0 weights, bit for bit
// vecDotQ4_0VNNI per pair.
//
//go:noescape
func vecDotQ4_0Tile4VNNI(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

// vecDotQ4_KTileVNNI computes out[a·outStride+r] = vecDotQ4_KAVX2(row r,
// act a, 256·nb) for r < 4 and a < 4·nq (1 ≤ nq ≤ 4), bit for bit: the
// four rows against up to 16 activations.
//
//go:noescape
func vecDotQ4_KTileVNNI(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int, nq int)

// vecDotQ5_KTileVNNI is vecDotQ4_KTileVNNI for Q5_K weights, bit for bit
// vecDotQ5_KAVX2 per pair.
//
//go:noescape
func vecDotQ5_KTileVNNI(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int, nq int)

// vecDotQ5_KVNNI and vecDotQ5_KRowsVNNI are the Q4_K VNNI kernels for
// Q5_K weights, bit for bit vecDotQ5_KAVX2.
//
//go:noescape
func vecDotQ5_KVNNI(row, act []byte, n int) float32

//go:noescape
func vecDotQ5_KRowsVNNI(rows *byte, rowStride, nrows int, act *byte, n int, out *float32)

// vecDotQ4_KVNNI (vecdot_tile_amd64.s) is vecDotQ4_KAVX2 on AVX-512 BW and
// VNNI, bit for bit.
//
//go:noescape
func vecDotQ4_KVNNI(row, act []byte, n int) float32

// vecDotQ4_KRowsVNNI computes out[r] = vecDotQ4_KVNNI(row r, act, n) for
// r < nrows, rows rowStride bytes apart, bit for bit.
//
//go:noescape
func vecDotQ4_KRowsVNNI(rows *byte, rowStride, nrows int, act *byte, n int, out *float32)

//go:noescape
func vecDotQ4_KAVX2(row, act []byte, n int) float32

// vecDotQ6_KTile4VNNI (vecdot_q6ktile_amd64.s, AVX-512 BW and VNNI)
// computes the 4×4 block out[a·outStride+r] = vecDotQ6_KAVX2(row r, act a,
// 256·nb), bit for bit.
//
//go:noescape
func vecDotQ6_KTile4VNNI(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ5_KAVX2(row, act []byte, n int) float32

//go:noescape
func vecDotQ6_KAVX2(row, act []byte, n int) float32

// dotF32F32AVX2 is dotF32F32 on the F32 vec-dot kernel: the float
// activations are the same bytes as an F32 activation row.
func dotF32F32AVX2(row []byte, x []float32) float32 {
	return vecDotF32AVX2(row, F32Bytes(x), len(x))
}

// expSubAVX2 is expSub (exp.go) on AVX2 and FMA.
//
//go:noescape
func expSubAVX2(x []float32, m float32) float32

// swigluAVX2 is swiglu (exp.go) on AVX2 and FMA; up is at least as long as
// gate.
//
//go:noescape
func swigluAVX2(gate, up []float32)

// scaleMaxAVX2 and scaleAVX2 (exp_amd64.s) are scaleMax and scale, bit for
// bit.
//
//go:noescape
func scaleMaxAVX2(x []float32, s float32) float32

//go:noescape
func scaleAVX2(x []float32, s float32)

// quantQ8_0ActAVX2 (quant_act_amd64.s) is quantQ8_0Act over nb blocks of x
// into dst, bit for bit.
//
//go:noescape
func quantQ8_0ActAVX2(x *float32, dst *byte, nb int)

// quantQ8_KAVX2 (quant_act_amd64.s) is quantQ8_K over nb blocks of x into
// dst, bit for bit.
//
//go:noescape
func quantQ8_KAVX2(x *float32, dst *byte, nb int)

func quantQ8_KSIMD(x []float32, dst []byte) {
	if nb := len(x) / QK_K; nb > 0 {
		quantQ8_KAVX2(&x[0], &dst[0], nb)
	}
}

// quantF16AVX2 (quant_act_amd64.s) is quantF16 over n values, a multiple
// of 16, bit for bit except for NaN payloads.
//
//go:noescape
func quantF16AVX2(x *float32, dst *byte, n int)

func quantF16SIMD(x []float32, dst []byte) {
	n := len(x) &^ 15
	if n > 0 {
		quantF16AVX2(&x[0], &dst[0], n)
	}
	quantF16(x[n:], dst[2*n:])
}

func quantQ8_0ActSIMD(x []float32, dst []byte) {
	if nb := len(x) / 32; nb > 0 {
		quantQ8_0ActAVX2(&x[0], &dst[0], nb)
	}
}

// tile4Func multiplies four weight rows with four activation rows (na for
// tiled) of nb blocks each (see vecDotQ8_0Tile4VNNI).
type tile4Func func(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

// tiled builds a VecDotTileFunc that covers the tile with tile4 in 4×na
// steps, four rows at a time against every activation, and the edges (the
// activations past the last whole na, the rows past the last whole four)
// with rows, which must compute what tile4 computes per pair. be is the
// weight type's block size; rowBlock and actBlock the block bytes.
func tiled(tile4 tile4Func, na int, rows VecDotRowsFunc, be, rowBlock, actBlock int) VecDotTileFunc {
	return func(w []byte, rowStride, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
		nb := n / be
		r4, a0 := 0, 0
		if nb > 0 && nacts >= na {
			r4, a0 = nrows&^3, nacts/na*na
		}
		for r := 0; r < r4; r += 4 {
			for a := 0; a < a0; a += na {
				tile4(&w[r*rowStride], rowStride, &acts[a*actStride], actStride, nb, &out[a*outStride+r], outStride)
			}
		}
		tileEdges(rows, w, rowStride, nrows, r4, acts, actStride, nacts, a0, n, nb*rowBlock, nb*actBlock, out, outStride)
	}
}

// tileEdges computes what tiled's register tiles left out, the activations
// [a0, nacts) against rows [0, r4) and every activation against rows
// [r4, nrows), one rows call per activation for each.
func tileEdges(rows VecDotRowsFunc, w []byte, rowStride, nrows, r4 int, acts []byte, actStride, nacts, a0, n, rb, ab int, out []float32, outStride int) {
	for a := 0; a < nacts; a++ {
		act := acts[a*actStride : a*actStride+ab]
		o := out[a*outStride : a*outStride+nrows]
		if a >= a0 && r4 > 0 {
			rows(w[:(r4-1)*rowStride+rb], rowStride, act, n, o[:r4])
		}
		if r4 < nrows {
			rows(w[r4*rowStride:], rowStride, act, n, o[r4:])
		}
	}
}

// tileQuadsFunc multiplies four weight rows with 4·nq activation rows of nb
// blocks each (see vecDotQ4_KTileVNNI).
type tileQuadsFunc func(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int, nq int)

// tiledQuads is tiled for a kernel that takes four rows against up to
// maxQuads quads of activations in one call, reusing each unpacked block of
// the rows for all of them.
func tiledQuads(tile tileQuadsFunc, maxQuads int, rows VecDotRowsFunc, be, rowBlock, actBlock int) VecDotTileFunc {
	return func(w []byte, rowStride, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
		nb := n / be
		r4, a0 := 0, 0
		if nb > 0 && nacts >= 4 {
			r4, a0 = nrows&^3, nacts&^3
		}
		for r := 0; r < r4; r += 4 {
			for a := 0; a < a0; {
				q := min((a0-a)/4, maxQuads)
				tile(&w[r*rowStride], rowStride, &acts[a*actStride], actStride, nb, &out[a*outStride+r], outStride, q)
				a += 4 * q
			}
		}
		tileEdges(rows, w, rowStride, nrows, r4, acts, actStride, nacts, a0, n, nb*rowBlock, nb*actBlock, out, outStride)
	}
}

// rowsAsmFunc is the shape of the assembly rows kernels: out[r] = the
// one-pair kernel of the row at rows + r·rowStride with act, r < nrows.
type rowsAsmFunc func(rows *byte, rowStride, nrows int, act *byte, n int, out *float32)

// rowsOf adapts an assembly rows kernel to VecDotRowsFunc.
func rowsOf(f rowsAsmFunc) VecDotRowsFunc {
	return func(rows []byte, stride int, act []byte, n int, out []float32) {
		switch {
		case len(out) == 0:
		case n == 0:
			clear(out)
		default:
			f(&rows[0], stride, len(out), &act[0], n, &out[0])
		}
	}
}

// loopRows is a VecDotRowsFunc calling one, a one-pair kernel of type t,
// once per row.
func loopRows(t Type, one VecDotFunc) VecDotRowsFunc {
	return func(rows []byte, stride int, act []byte, n int, out []float32) {
		rowByRow(t, one, rows, stride, act, n, out)
	}
}

// haveArchKernels says whether this build has assembly kernels at all.
const haveArchKernels = true

// archTable returns the SIMD kernel table for f, or nil when f lacks what
// every SIMD kernel here needs (AVX2, FMA and F16C).
func archTable(f Features) *kernelTable {
	if !f.AVX2 || !f.FMA || !f.F16C {
		return nil
	}
	t := genericTable()
	t.name = "avx2"
	t.dotF32[F32] = dotF32F32AVX2
	t.dotF32[F16] = dotF16F32AVX2
	t.dotF32Tile[F16] = dotF16F32Tile
	t.vecDot[F32] = vecDotF32AVX2
	t.vecDot[F16] = vecDotF16AVX2
	t.vecDot[BF16] = vecDotBF16AVX2
	t.vecDot[Q8_0] = vecDotQ8_0AVX2
	t.vecDot[Q4_0] = vecDotQ4_0AVX2
	t.vecDot[Q4_K] = vecDotQ4_KAVX2
	t.vecDot[Q5_K] = vecDotQ5_KAVX2
	t.vecDot[Q6_K] = vecDotQ6_KAVX2
	setKTileAVX2(t)
	setLowbitAVX2(t)
	setQ8TileAVX2(t)
	setPackAVX2(t)
	t.expSub = expSubAVX2
	t.swiglu = swigluAVX2
	t.scaleMax = scaleMaxAVX2
	t.scale = scaleAVX2
	t.quantizeAct[Q8_0] = quantQ8_0ActSIMD
	t.quantizeAct[Q8_K] = quantQ8_KSIMD
	t.quantizeAct[F16] = quantF16SIMD
	if !f.AVX512F || !f.AVX512VL || !f.AVX512VNNI {
		return t
	}
	t.name = "avx512"
	clearQ8TileAVX2(t)
	// The VNNI kernels below multiply Q8_0 and Q4_0 rows as stored; the
	// packed AVX2 kernels were not measured against them (no AVX-512
	// machine).
	t.packRows[Q8_0], t.pack[Q8_0], t.vecDotPacked[Q8_0] = 0, nil, nil
	t.packRows[Q4_0], t.pack[Q4_0], t.vecDotPacked[Q4_0] = 0, nil, nil
	t.vecDotTile[F32] = tiled(vecDotF32Tile43AVX512, 3, loopRows(F32, vecDotF32AVX2), 1, 4, 4)
	t.vecDotRows[F16] = rowsOf(vecDotF16RowsAVX512)
	t.vecDotTile[F16] = tiled(vecDotF16Tile43AVX512, 3, t.vecDotRows[F16], 1, 2, 2)
	t.vecDot[Q8_0] = vecDotQ8_0VNNI
	if f.AVX512BW {
		t.vecDotRows[Q8_0] = rowsOf(vecDotQ8_0RowsVNNI)
		t.vecDotTile[Q8_0] = tiled(vecDotQ8_0Tile4VNNI, 4, t.vecDotRows[Q8_0], 32, 34, 34)
		t.vecDotTile[Q4_0] = tiled(vecDotQ4_0Tile4VNNI, 4, loopRows(Q4_0, vecDotQ4_0VNNI), 32, 18, 34)
		t.vecDot[Q4_K] = vecDotQ4_KVNNI
		t.vecDotRows[Q4_K] = rowsOf(vecDotQ4_KRowsVNNI)
		t.vecDot[Q5_K] = vecDotQ5_KVNNI
		t.vecDotRows[Q5_K] = rowsOf(vecDotQ5_KRowsVNNI)
		t.vecDotTile[Q5_K] = tiledQuads(vecDotQ5_KTileVNNI, 4, t.vecDotRows[Q5_K], QK_K, 176, 292)
		t.vecDotTile[Q6_K] = tiled(vecDotQ6_KTile4VNNI, 4, t.vecDotRows[Q6_K], QK_K, 210, 292)
		t.vecDotTile[Q4_K] = tiledQuads(vecDotQ4_KTileVNNI, 4, t.vecDotRows[Q4_K], QK_K, 144, 292)
	}
	t.vecDot[Q4_0] = vecDotQ4_0VNNI
	return t
}
