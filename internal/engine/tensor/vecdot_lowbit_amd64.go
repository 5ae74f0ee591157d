//go:build amd64 && !purego

package tensor

// AVX2 kernels of the 2–4-bit types (vecdot_lowbit_amd64.s), each what the
// generic function of the same name without the suffix computes
// (vecdot_lowbit.go) up to float rounding.

//go:noescape
func vecDotQ2_KAVX2(row, act []byte, n int) float32

//go:noescape
func vecDotQ3_KAVX2(row, act []byte, n int) float32

//go:noescape
func vecDotIQ4_NLAVX2(row, act []byte, n int) float32

//go:noescape
func vecDotIQ4_XSAVX2(row, act []byte, n int) float32

//go:noescape
func vecDotMXFP4AVX2(row, act []byte, n int) float32

// setLowbitAVX2 puts the AVX2 kernels of the 2–4-bit types into t.
func setLowbitAVX2(t *kernelTable) {
	t.vecDot[Q2_K] = vecDotQ2_KAVX2
	t.vecDot[Q3_K] = vecDotQ3_KAVX2
	t.vecDot[IQ4_NL] = vecDotIQ4_NLAVX2
	t.vecDot[IQ4_XS] = vecDotIQ4_XSAVX2
	t.vecDot[MXFP4] = vecDotMXFP4AVX2
	t.vecDotRows[Q2_K] = asmRows(Q2_K, vecDotQ2_KRowsAVX2)
	t.vecDotRows[Q3_K] = asmRows(Q3_K, vecDotQ3_KRowsAVX2)
	t.vecDotRows[IQ4_NL] = asmRows(IQ4_NL, vecDotIQ4_NLRowsAVX2)
	t.vecDotRows[IQ4_XS] = asmRows(IQ4_XS, vecDotIQ4_XSRowsAVX2)
	t.vecDotRows[MXFP4] = asmRows(MXFP4, vecDotMXFP4RowsAVX2)
	t.vecDotTile[MXFP4] = tiledLowbit([4]lowbitTileFunc{vecDotMXFP4Tile1AVX2, vecDotMXFP4Tile2AVX2, vecDotMXFP4Tile3AVX2, vecDotMXFP4Tile4AVX2}, t.vecDotRows[MXFP4])
	t.vecDotTile[IQ4_NL] = tiledLowbit([4]lowbitTileFunc{vecDotIQ4NLTile1AVX2, vecDotIQ4NLTile2AVX2, vecDotIQ4NLTile3AVX2, vecDotIQ4NLTile4AVX2}, t.vecDotRows[IQ4_NL])
	t.vecDotTile[IQ4_XS] = tiledQ8K(IQ4_XS, vecDotIQ4_XSRowsAVX2, [5]q8kTileFunc{2: vecDotIQ4XSTile2AVX2, 3: vecDotIQ4XSTile3AVX2, 4: vecDotIQ4XSTile4AVX2})
	setK23TileAVX2(t)
}
