//go:build amd64 && !purego

package tensor

//go:generate sh -c "python3 gen_k23tile.py > vecdot_k23tile_amd64.s"

// AVX2 tiles of Q2_K and Q3_K weights (vecdot_k23tile_amd64.s): every row
// against na = 2..4 Q8_K activations, each output bit for bit the one-row
// kernel's (vecDotQ2_KAVX2, vecDotQ3_KAVX2) for its pair. A row's scales
// and quants are unpacked once per block for all na activations.

//go:noescape
func vecDotQ2_KTile2AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ2_KTile3AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ2_KTile4AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ3_KTile2AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ3_KTile3AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotQ3_KTile4AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

// q8kTileFunc multiplies nrows rows of nb 256-element blocks with a fixed
// number of Q8_K activations (the Q2_K, Q3_K and IQ4_XS tiles).
type q8kTileFunc func(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

// tiledQ8K is the VecDotTileFunc of a type with Q8_K activations (Q2_K,
// Q3_K, IQ4_XS) from its tiles by activation count (tiles[2..4]) and its
// row loop: the activations four at a time, a last group of two or three
// in the smaller tile, and a single one through the row loop.
func tiledQ8K(t Type, rows asmRowsFunc, tiles [5]q8kTileFunc) VecDotTileFunc {
	return func(w []byte, rowStride, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
		nb := n / QK_K
		ab := nb * 292
		for a0 := 0; a0 < nacts; a0 += 4 {
			na := min(4, nacts-a0)
			if na == 1 || nb == 0 {
				for a := a0; a < a0+na; a++ {
					rowsAsm(t, rows, w, rowStride, acts[a*actStride:a*actStride+ab], n, out[a*outStride:a*outStride+nrows])
				}
				continue
			}
			tiles[na](&w[0], rowStride, nrows, &acts[a0*actStride], actStride, nb, &out[a0*outStride], outStride)
		}
	}
}

// setK23TileAVX2 puts the Q2_K and Q3_K tiles into an AVX2 table.
func setK23TileAVX2(t *kernelTable) {
	t.vecDotTile[Q2_K] = tiledQ8K(Q2_K, vecDotQ2_KRowsAVX2, [5]q8kTileFunc{2: vecDotQ2_KTile2AVX2, 3: vecDotQ2_KTile3AVX2, 4: vecDotQ2_KTile4AVX2})
	t.vecDotTile[Q3_K] = tiledQ8K(Q3_K, vecDotQ3_KRowsAVX2, [5]q8kTileFunc{2: vecDotQ3_KTile2AVX2, 3: vecDotQ3_KTile3AVX2, 4: vecDotQ3_KTile4AVX2})
}
