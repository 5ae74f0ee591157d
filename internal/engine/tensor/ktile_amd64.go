//go:build amd64 && !purego

package tensor

//go:generate sh -c "python3 gen_ktile.py > vecdot_ktile_amd64.s"

// vecDotQ4_KTile24AVX2 (vecdot_ktile_amd64.s, AVX2) computes the 2×4 block
// out[a·outStride+r] = vecDotQ4_KAVX2(row r, act a, 256·nb) of rows
// rowStride bytes apart and activations actStride bytes apart, bit for bit.
//
//go:noescape
func vecDotQ4_KTile24AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

// vecDotQ6_KTile24AVX2 is vecDotQ4_KTile24AVX2 for Q6_K weights, bit for
// bit vecDotQ6_KAVX2 per pair.
//
//go:noescape
func vecDotQ6_KTile24AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

// setKTileAVX2 puts the AVX2 K-quant register tiles into t, whose one-row
// Q4_K and Q6_K kernels must be the AVX2 ones they match.
func setKTileAVX2(t *kernelTable) {
	t.vecDotTile[Q4_K] = tiledRA(vecDotQ4_KTile24AVX2, 2, 4, loopRows(Q4_K, vecDotQ4_KAVX2), QK_K, 144, 292)
	t.vecDotTile[Q6_K] = tiledRA(vecDotQ6_KTile24AVX2, 2, 4, loopRows(Q6_K, vecDotQ6_KAVX2), QK_K, 210, 292)
}

// tiledRA is tiled (kernels_amd64.go) for a register tile of nr rows by na
// activations: the tile covers whole nr×na steps, rows nr at a time
// against every activation, and rows covers the edges.
func tiledRA(tile tile4Func, nr, na int, rows VecDotRowsFunc, be, rowBlock, actBlock int) VecDotTileFunc {
	return func(w []byte, rowStride, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
		nb := n / be
		rr, a0 := 0, 0
		if nb > 0 && nacts >= na {
			rr, a0 = nrows/nr*nr, nacts/na*na
		}
		for r := 0; r < rr; r += nr {
			for a := 0; a < a0; a += na {
				tile(&w[r*rowStride], rowStride, &acts[a*actStride], actStride, nb, &out[a*outStride+r], outStride)
			}
		}
		tileEdges(rows, w, rowStride, nrows, rr, acts, actStride, nacts, a0, n, nb*rowBlock, nb*actBlock, out, outStride)
	}
}
