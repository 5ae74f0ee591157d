//go:build amd64 && !purego

package tensor

//go:generate sh -c "python3 gen_lowbit_tile.py > vecdot_lowbittile_amd64.s"

// Register tiles of MXFP4 and IQ4_NL weights (vecdot_lowbittile_amd64.s),
// na = 1..4 activations against every row, each output bit for bit the
// one-row AVX2 kernel's.

//go:noescape
func vecDotMXFP4Tile1AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, ys *float32, nb int, out *float32, outStride int)

//go:noescape
func vecDotMXFP4Tile2AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, ys *float32, nb int, out *float32, outStride int)

//go:noescape
func vecDotMXFP4Tile3AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, ys *float32, nb int, out *float32, outStride int)

//go:noescape
func vecDotMXFP4Tile4AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, ys *float32, nb int, out *float32, outStride int)

//go:noescape
func vecDotIQ4NLTile1AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, ys *float32, nb int, out *float32, outStride int)

//go:noescape
func vecDotIQ4NLTile2AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, ys *float32, nb int, out *float32, outStride int)

//go:noescape
func vecDotIQ4NLTile3AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, ys *float32, nb int, out *float32, outStride int)

//go:noescape
func vecDotIQ4NLTile4AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, ys *float32, nb int, out *float32, outStride int)

// lowbitTileFunc multiplies nrows weight rows of nb 32-element blocks with
// na activations (na fixed per kernel), ys their block scales as floats.
type lowbitTileFunc func(rows *byte, rowStride, nrows int, acts *byte, actStride int, ys *float32, nb int, out *float32, outStride int)

// lowbitTileScales is how many activation block scales the tiles' scale
// buffer holds: four activations of up to 256 blocks (n ≤ 8192), fewer
// activations per call for longer rows. Small, because Go clears it on
// every call.
const lowbitTileScales = 1024

// tiledLowbit builds the VecDotTileFunc of a 32-element-block type with
// Q8_0 activations from its tiles by activation count (tiles[na-1]) and
// its one-row kernel's rows loop.
func tiledLowbit(tiles [4]lowbitTileFunc, rows VecDotRowsFunc) VecDotTileFunc {
	return func(w []byte, rowStride, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
		nb := n / 32
		if nacts == 1 || nb == 0 || nb > lowbitTileScales {
			ab := nb * 34
			for a := 0; a < nacts; a++ {
				rows(w, rowStride, acts[a*actStride:a*actStride+ab], n, out[a*outStride:a*outStride+nrows])
			}
			return
		}
		lowbitTiles(tiles, w, rowStride, nrows, acts, actStride, nacts, nb, out, outStride)
	}
}

// lowbitTiles runs the tiles over the activations, as many at a time as
// the scale buffer and the widest tile allow.
func lowbitTiles(tiles [4]lowbitTileFunc, w []byte, rowStride, nrows int, acts []byte, actStride, nacts, nb int, out []float32, outStride int) {
	var ys [lowbitTileScales]float32
	step := min(4, lowbitTileScales/nb)
	for a0 := 0; a0 < nacts; a0 += step {
		na := min(step, nacts-a0)
		for a := 0; a < na; a++ {
			act := acts[(a0+a)*actStride:]
			s := ys[a*nb : (a+1)*nb]
			for b := range s {
				s[b] = f16At(act, 34*b)
			}
		}
		tiles[na-1](&w[0], rowStride, nrows, &acts[a0*actStride], actStride, &ys[0], nb, &out[a0*outStride], outStride)
	}
}

// IQ4_XS tiles: nrows rows of nb 256-element blocks against na = 2..4 Q8_K
// activations, bit for bit vecDotIQ4_XSAVX2 per pair.

//go:noescape
func vecDotIQ4XSTile2AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotIQ4XSTile3AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func vecDotIQ4XSTile4AVX2(rows *byte, rowStride, nrows int, acts *byte, actStride int, nb int, out *float32, outStride int)
