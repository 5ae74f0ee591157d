//go:build amd64 && !purego

package tensor

//go:generate sh -c "python3 gen_q8tile.py > vecdot_q8tile_amd64.s"

// AVX2 register tiles of Q8_0 and Q4_0 weights (vecdot_q8tile_amd64.s):
// four rows against four (Tile44), two (Tile42) or one (Tile41) activation
// rows of nb blocks, each output bit for bit the one-row AVX2 kernel's for
// its pair. They are tile4Funcs; Tile41 ignores actStride.

//go:noescape
func vecDotQ8_0Tile44AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ8_0Tile42AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ8_0Tile41AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ4_0Tile44AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ4_0Tile42AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ4_0Tile41AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

// q8Tiles are the three tiles of one weight type and its rows kernel (the
// one-row kernel row after row, asmRows).
type q8Tiles struct {
	t44, t42, t41 tile4Func
	rows          VecDotRowsFunc
	blockBytes    int // weight bytes per 32 elements
}

// tile is a VecDotTileFunc: each four rows against the activations four,
// then two, then one at a time (the few activations a mixture-of-experts
// batch routes to one expert still take the wide tiles), and the rows
// past the last four by rows; a single activation (decode) goes to rows
// alone. Decode streams its rows from memory, and one sequential stream
// (what the prefetchers follow best) beats the 4×1 tile's four interleaved
// ones there (BenchmarkQ8Decode: 2048 streamed rows took about 1.3× as
// long through the tile).
func (q q8Tiles) tile(w []byte, rowStride, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
	nb := n / 32
	r4 := 0
	if nb > 0 {
		r4 = nrows &^ 3
	}
	if nacts == 1 {
		q.rows(w[:(nrows-1)*rowStride+nb*q.blockBytes], rowStride, acts, n, out[:nrows])
		return
	}
	for r := 0; r < r4; r += 4 {
		a := 0
		for ; a+4 <= nacts; a += 4 {
			q.t44(&w[r*rowStride], rowStride, &acts[a*actStride], actStride, nb, &out[a*outStride+r], outStride)
		}
		if a+2 <= nacts {
			q.t42(&w[r*rowStride], rowStride, &acts[a*actStride], actStride, nb, &out[a*outStride+r], outStride)
			a += 2
		}
		if a < nacts {
			q.t41(&w[r*rowStride], rowStride, &acts[a*actStride], actStride, nb, &out[a*outStride+r], outStride)
		}
	}
	tileEdges(q.rows, w, rowStride, nrows, r4, acts, actStride, nacts, nacts, n, nb*q.blockBytes, nb*34, out, outStride)
}

// setQ8TileAVX2 puts the Q8_0 and Q4_0 rows and tile kernels into an AVX2
// table whose one-pair kernels are vecDotQ8_0AVX2 and vecDotQ4_0AVX2.
func setQ8TileAVX2(t *kernelTable) {
	q8 := q8Tiles{vecDotQ8_0Tile44AVX2, vecDotQ8_0Tile42AVX2, vecDotQ8_0Tile41AVX2, asmRows(Q8_0, vecDotQ8_0RowsAVX2), 34}
	q4 := q8Tiles{vecDotQ4_0Tile44AVX2, vecDotQ4_0Tile42AVX2, vecDotQ4_0Tile41AVX2, asmRows(Q4_0, vecDotQ4_0RowsAVX2), 18}
	t.vecDotRows[Q8_0], t.vecDotTile[Q8_0] = q8.rows, q8.tile
	t.vecDotRows[Q4_0], t.vecDotTile[Q4_0] = q4.rows, q4.tile
}

// clearQ8TileAVX2 removes them again where the table swaps in other
// one-pair kernels (the AVX-512 VNNI ones), which sum in another order.
func clearQ8TileAVX2(t *kernelTable) {
	t.vecDotRows[Q8_0], t.vecDotTile[Q8_0] = nil, nil
	t.vecDotRows[Q4_0], t.vecDotTile[Q4_0] = nil, nil
}
