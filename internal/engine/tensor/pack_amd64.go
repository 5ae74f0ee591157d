//go:build amd64 && !purego

package tensor

// mxfp4x8DotAVX2 (pack_amd64.s) computes out[8g+r] for g < groups and
// r < 8: row r of packed group g (nb blocks of mxfp4GroupSize bytes each,
// the groups one after the other) against one Q8_0 activation row of nb
// blocks. Per pair it adds, block by block in one float32 accumulator,
// float(Σ v·y) × (e8m0Half(e) × fp16(y.d)) with one rounding (FMA): the
// order mxfp4x8Ref (pack_test.go) spells out.
//
//go:noescape
func mxfp4x8DotAVX2(packed *byte, groups int, act *byte, nb int, out *float32)

// vecDotPackedMXFP4AVX2 is the VecDotPackedFunc of MXFP4 on AVX2: one pass
// over the packed rows per activation. A prefill tile's rows stay in L2
// between the passes, and each pair's sum is the kernel's however many
// activations a call has.
func vecDotPackedMXFP4AVX2(packed []byte, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
	nb := n / 32
	for a := 0; a < nacts; a++ {
		mxfp4x8DotAVX2(&packed[0], nrows/mxfp4Group, &acts[a*actStride], nb, &out[a*outStride])
	}
}

// setPackAVX2 packs MXFP4 weights for the AVX2 kernel.
func setPackAVX2(t *kernelTable) {
	t.packRows[MXFP4] = mxfp4Group
	t.pack[MXFP4] = packMXFP4x8
	t.vecDotPacked[MXFP4] = vecDotPackedMXFP4AVX2
}
