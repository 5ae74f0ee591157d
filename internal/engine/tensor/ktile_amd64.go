//go:build amd64 && !purego

package tensor

//go:generate sh -c "python3 gen_ktile.py > vecdot_ktile_amd64.s"

// The AVX2 K-quant register tiles (vecdot_ktile_amd64.s, gen_ktile.py).
// vecDotQ4_KTile2AAVX2 computes the 2×A block out[a·outStride+r] =
// vecDotQ4_KAVX2(row r, act a, 256·nb) of rows rowStride bytes apart and
// activations actStride bytes apart, bit for bit; the Q6_K ones are the
// same for Q6_K weights, bit for bit vecDotQ6_KAVX2 per pair.

//go:noescape
func vecDotQ4_KTile24AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ4_KTile23AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ4_KTile22AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ6_KTile24AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ6_KTile23AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ6_KTile22AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

// setKTileAVX2 puts the AVX2 K-quant register tiles into t, whose one-row
// Q4_K and Q6_K kernels must be the AVX2 ones they match.
func setKTileAVX2(t *kernelTable) {
	t.vecDotTile[Q4_K] = tiledPairs([3]tile4Func{vecDotQ4_KTile22AVX2, vecDotQ4_KTile23AVX2, vecDotQ4_KTile24AVX2},
		loopRows(Q4_K, vecDotQ4_KAVX2), 144, 292)
	t.vecDotTile[Q6_K] = tiledPairs([3]tile4Func{vecDotQ6_KTile22AVX2, vecDotQ6_KTile23AVX2, vecDotQ6_KTile24AVX2},
		loopRows(Q6_K, vecDotQ6_KAVX2), 210, 292)
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
		for r := 0; r < rr; r += 2 {
			for a := 0; a < a0; {
				m := min(a0-a, 4)
				if a0-a == 5 {
					m = 3
				}
				tiles[m-2](&w[r*rowStride], rowStride, &acts[a*actStride], actStride, nb, &out[a*outStride+r], outStride)
				a += m
			}
		}
		tileEdges(rows, w, rowStride, nrows, rr, acts, actStride, nacts, a0, n, nb*rowBlock, nb*actBlock, out, outStride)
	}
}
