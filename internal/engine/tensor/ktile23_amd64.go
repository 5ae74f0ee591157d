//go:build amd64 && !purego

package tensor

//go:generate sh -c "python3 gen_k23tile.py > vecdot_k23tile_amd64.s"

// AVX2 tiles of Q2_K weights (vecdot_k23tile_amd64.s): every row against
// na = 2..4 Q8_K activations, each output bit for bit vecDotQ2_KAVX2's for
// its pair. The row's scales, mins and 2-bit quants are unpacked once per
// block for all na activations.

//go:noescape
func vecDotQ2_KTile2AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ2_KTile3AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ2_KTile4AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

// tiledQ2_K is the VecDotTileFunc of Q2_K: the activations four at a time,
// a last group of two or three in the smaller tile, and a single one
// through the row loop.
func tiledQ2_K(w []byte, rowStride, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
	tiles := [5]func(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int){
		2: vecDotQ2_KTile2AVX2, 3: vecDotQ2_KTile3AVX2, 4: vecDotQ2_KTile4AVX2,
	}
	nb := n / QK_K
	ab := nb * 292
	for a0 := 0; a0 < nacts; a0 += 4 {
		na := min(4, nacts-a0)
		if na == 1 || nb == 0 {
			for a := a0; a < a0+na; a++ {
				rowsAsm(Q2_K, vecDotQ2_KRowsAVX2, w, rowStride, acts[a*actStride:a*actStride+ab], n, out[a*outStride:a*outStride+nrows])
			}
			continue
		}
		tiles[na](&w[0], rowStride, nrows, &acts[a0*actStride], actStride, nb, &out[a0*outStride], outStride)
	}
}
