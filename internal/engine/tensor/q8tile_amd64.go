//go:build amd64 && !purego

package tensor

//go:generate sh -c "python3 gen_q8tile.py > vecdot_q8tile_amd64.s"

// AVX2 register tiles of Q8_0 and Q4_0 weights (vecdot_q8tile_amd64.s):
// four rows against two (Tile42) or one (Tile41) activation rows of nb
// blocks, each output bit for bit the one-row AVX2 kernel's for its pair.
// They are tile4Funcs; Tile41 ignores actStride.

//go:noescape
func vecDotQ8_0Tile42AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ8_0Tile41AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ4_0Tile42AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ4_0Tile41AVX2(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)

// rowsByFour is a VecDotRowsFunc for 32-element blocks of rb bytes a row:
// four rows at a time through tile41, the rest through one, which must
// compute what tile41 computes per pair.
func rowsByFour(tile41 tile4Func, one VecDotFunc, blockBytes int) VecDotRowsFunc {
	return func(rows []byte, stride int, act []byte, n int, out []float32) {
		nb := n / 32
		r4 := 0
		if nb > 0 {
			r4 = len(out) &^ 3
		}
		for r := 0; r < r4; r += 4 {
			tile41(&rows[r*stride], stride, &act[0], 0, nb, &out[r], 0)
		}
		rb := nb * blockBytes
		for r := r4; r < len(out); r++ {
			out[r] = one(rows[r*stride:r*stride+rb], act, n)
		}
	}
}

// setQ8TileAVX2 puts the Q8_0 and Q4_0 rows and tile kernels into an AVX2
// table whose one-pair kernels are vecDotQ8_0AVX2 and vecDotQ4_0AVX2.
func setQ8TileAVX2(t *kernelTable) {
	t.vecDotRows[Q8_0] = rowsByFour(vecDotQ8_0Tile41AVX2, vecDotQ8_0AVX2, 34)
	t.vecDotTile[Q8_0] = tiled(vecDotQ8_0Tile42AVX2, 2, t.vecDotRows[Q8_0], 32, 34, 34)
	t.vecDotRows[Q4_0] = rowsByFour(vecDotQ4_0Tile41AVX2, vecDotQ4_0AVX2, 18)
	t.vecDotTile[Q4_0] = tiled(vecDotQ4_0Tile42AVX2, 2, t.vecDotRows[Q4_0], 32, 18, 34)
}

// clearQ8TileAVX2 removes them again where the table swaps in other
// one-pair kernels (the AVX-512 VNNI ones), which sum in another order.
func clearQ8TileAVX2(t *kernelTable) {
	t.vecDotRows[Q8_0], t.vecDotTile[Q8_0] = nil, nil
	t.vecDotRows[Q4_0], t.vecDotTile[Q4_0] = nil, nil
}
