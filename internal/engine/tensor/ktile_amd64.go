//go:build amd64 && !purego

package tensor

//go:generate sh -c "python3 gen_ktile.py > vecdot_ktile_amd64.s"

// The AVX2 K-quant register tiles (vecdot_ktile_amd64.s, gen_ktile.py).
// vecDotQ4_KTile2AAVX2 computes the 2×A block out[a·outStride+r] =
// vecDotQ4_KAVX2(row r, act a, 256·nb) of rows rowStride bytes apart and
// activations actStride bytes apart, bit for bit; the Q5_K and Q6_K ones
// are the same for their weights, bit for bit vecDotQ5_KAVX2 and
// vecDotQ6_KAVX2 per pair.

//go:noescape
func vecDotQ4_KTile24AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ4_KTile23AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ4_KTile22AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ5_KTile24AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ5_KTile23AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ5_KTile22AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ6_KTile24AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ6_KTile23AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ6_KTile22AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

// setKTileAVX2 puts the AVX2 K-quant register tiles into t, whose one-row
// Q4_K, Q5_K and Q6_K kernels must be the AVX2 ones they match.
func setKTileAVX2(t *kernelTable) {
	t.vecDotRows[Q4_K] = asmRows(Q4_K, vecDotQ4_KRowsAVX2)
	t.vecDotRows[Q5_K] = asmRows(Q5_K, vecDotQ5_KRowsAVX2)
	t.vecDotRows[Q6_K] = asmRows(Q6_K, vecDotQ6_KRowsAVX2)
	t.vecDotTile[Q4_K] = tiledPairs([3]tile4Func{vecDotQ4_KTile22AVX2, vecDotQ4_KTile23AVX2, vecDotQ4_KTile24AVX2},
		t.vecDotRows[Q4_K], 144, 292)
	t.vecDotTile[Q5_K] = tiledPairs([3]tile4Func{vecDotQ5_KTile22AVX2, vecDotQ5_KTile23AVX2, vecDotQ5_KTile24AVX2},
		t.vecDotRows[Q5_K], 176, 292)
	t.vecDotTile[Q6_K] = tiledPairs([3]tile4Func{vecDotQ6_KTile22AVX2, vecDotQ6_KTile23AVX2, vecDotQ6_KTile24AVX2},
		t.vecDotRows[Q6_K], 210, 292)
}

// tiledPairs is tiled (kernels_amd64.go) for K-quant tiles of two rows by
// two to four activations, tiles[a-2] taking a: rows two at a time against
// the activations four at a time, the last five as three and two and the
// last two or three in one call. rows covers the rest: the odd last row,
// and a lone activation (decode's one token keeps the one-row kernel).
func tiledPairs(tiles [3]tile4Func, rows VecDotRowsFunc, rowBlock, actBlock int) VecDotTileFunc {
	return func(w []byte, rowStride, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
		nb := n / QK_K
		rr, a0 := 0, 0
		if nb > 0 && nacts >= 2 {
			rr, a0 = nrows&^1, nacts
		}
		tile := func(r, a, m int) {
			tiles[m-2](&w[r*rowStride], rowStride, &acts[a*actStride], actStride, nb, &out[a*outStride+r], outStride)
		}
		// The smaller operand set is the one walked again for every step of
		// the larger, which then streams through the caches once.
		if a0*actBlock > rr*rowBlock {
			for a, m := 0, 0; a < a0; a += m {
				m = actStep(a0 - a)
				for r := 0; r < rr; r += 2 {
					tile(r, a, m)
				}
			}
		} else {
			for r := 0; r < rr; r += 2 {
				for a, m := 0, 0; a < a0; a += m {
					m = actStep(a0 - a)
					tile(r, a, m)
				}
			}
		}
		tileEdges(rows, w, rowStride, nrows, rr, acts, actStride, nacts, a0, n, nb*rowBlock, nb*actBlock, out, outStride)
	}
}

// actStep is how many of the left activations (at least two) the next
// tile takes: four, but the last five as three and two.
func actStep(left int) int {
	if left == 5 {
		return 3
	}
	return min(left, 4)
}
