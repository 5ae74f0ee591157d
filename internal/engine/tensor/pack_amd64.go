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

//go:generate sh -c "python3 gen_q8pack.py > vecdot_q8pack_amd64.s"

// q8x8Dot{1..4}AVX2 (vecdot_q8pack_amd64.s) multiply packed Q8_0 groups
// with 1..4 Q8_0 activation rows: out[a·outStride + 8g + r]. Per pair each
// block adds float(Σ w·y) × (d_w × d_y) to one float32 accumulator with
// one FMA, whatever the number of activations (q8x8Ref, pack_test.go).

//go:noescape
func q8x8Dot1AVX2(packed *byte, groups int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func q8x8Dot2AVX2(packed *byte, groups int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func q8x8Dot3AVX2(packed *byte, groups int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func q8x8Dot4AVX2(packed *byte, groups int, acts *byte, actStride int, nb int, out *float32, outStride int)

// q4x8Dot{1..4}AVX2 are the same for packed Q4_0 groups (q4x8Ref).

//go:noescape
func q4x8Dot1AVX2(packed *byte, groups int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func q4x8Dot2AVX2(packed *byte, groups int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func q4x8Dot3AVX2(packed *byte, groups int, acts *byte, actStride int, nb int, out *float32, outStride int)

//go:noescape
func q4x8Dot4AVX2(packed *byte, groups int, acts *byte, actStride int, nb int, out *float32, outStride int)

// packedDotFunc multiplies packed groups with a fixed number of
// activations.
type packedDotFunc func(packed *byte, groups int, acts *byte, actStride int, nb int, out *float32, outStride int)

// packedDots makes the VecDotPackedFunc of a 32-element type from its
// kernels by activation count (kernels[1..4]): the activations four at a
// time through every group, the last one to three in the kernel of their
// count.
func packedDots(kernels [5]packedDotFunc) VecDotPackedFunc {
	return func(packed []byte, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
		nb := n / 32
		if nb == 0 {
			for a := 0; a < nacts; a++ {
				clear(out[a*outStride : a*outStride+nrows])
			}
			return
		}
		for a0 := 0; a0 < nacts; a0 += 4 {
			na := min(4, nacts-a0)
			kernels[na](&packed[0], nrows/8, &acts[a0*actStride], actStride, nb, &out[a0*outStride], outStride)
		}
	}
}

// setPackAVX2 packs MXFP4, Q8_0 and Q4_0 weights for the AVX2 kernels.
func setPackAVX2(t *kernelTable) {
	t.packRows[MXFP4] = mxfp4Group
	t.pack[MXFP4] = packMXFP4x8
	t.vecDotPacked[MXFP4] = vecDotPackedMXFP4AVX2
	t.packRows[Q8_0] = 8
	t.pack[Q8_0] = packQ8_0x8
	t.vecDotPacked[Q8_0] = packedDots([5]packedDotFunc{1: q8x8Dot1AVX2, 2: q8x8Dot2AVX2, 3: q8x8Dot3AVX2, 4: q8x8Dot4AVX2})
	t.packRows[Q4_0] = 8
	t.pack[Q4_0] = packQ4_0x8
	t.vecDotPacked[Q4_0] = packedDots([5]packedDotFunc{1: q4x8Dot1AVX2, 2: q4x8Dot2AVX2, 3: q4x8Dot3AVX2, 4: q4x8Dot4AVX2})
}
