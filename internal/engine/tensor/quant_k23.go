package tensor

// The 2- and 3-bit K-quant weight quantizers: ggml's quantize_row_q2_K_ref
// and quantize_row_q3_K_ref (what llama.cpp's quantizer runs without an
// importance matrix), written from the format's definition with the same
// float operations in the same order, so the bytes match.

// packK2bit packs 256 two-bit values the way Q2_K and Q3_K store them: each
// 32-byte group g holds elements 128g+l (bits 0–1), +32, +64 and +96
// (bits 6–7) of the group's 128.
func packK2bit(dst []byte, L *[QK_K]uint8) {
	for j := 0; j < QK_K; j += 128 {
		for l := 0; l < 32; l++ {
			dst[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
		}
	}
}

// Q2_K: sixteen 16-element sub-blocks, each x ≈ d·sc·q − dmin·m with q in
// 0..3 and 4-bit sc, m (scales[j] = sc | m<<4), fitted by makeQKX2 with
// weights |x| and absolute errors.
func quantQ2_K(x []float32, dst []byte) {
	var L [QK_K]uint8
	var laux [16]uint8
	var weights [16]float32
	var scales, mins [16]float32
	const q4scale = 15
	for b := 0; b < len(x)/QK_K; b++ {
		xb, blk := x[b*QK_K:b*QK_K+QK_K], dst[b*84:b*84+84]
		sc := blk[0:16]
		var maxScale, maxMin float32
		for j := 0; j < 16; j++ {
			xs := xb[16*j : 16*j+16]
			for l, v := range xs {
				weights[l] = abs32(v)
			}
			scales[j], mins[j] = makeQKX2(3, xs, weights[:], L[16*j:16*j+16], laux[:], -0.5, 0.1, 15, true)
			if scales[j] > maxScale {
				maxScale = scales[j]
			}
			if mins[j] > maxMin {
				maxMin = mins[j]
			}
		}
		if maxScale > 0 {
			iscale := q4scale / maxScale
			for j := range sc {
				sc[j] = uint8(nearestInt(float32(iscale * scales[j])))
			}
			putF16(blk[80:], maxScale/q4scale)
		} else {
			clear(sc)
			putF16(blk[80:], 0)
		}
		if maxMin > 0 {
			iscale := q4scale / maxMin
			for j := range sc {
				sc[j] |= uint8(nearestInt(float32(iscale*mins[j]))) << 4
			}
			putF16(blk[82:], maxMin/q4scale)
		} else {
			putF16(blk[82:], 0)
		}
		dh, dminh := f16At(blk, 80), f16At(blk, 82)
		for j := 0; j < 16; j++ {
			d := dh * float32(sc[j]&0xf)
			if d == 0 {
				continue
			}
			dm := dminh * float32(sc[j]>>4)
			for ii := 0; ii < 16; ii++ {
				l := nearestInt((xb[16*j+ii] + dm) / d)
				L[16*j+ii] = uint8(clampInt(l, 0, 3))
			}
		}
		packK2bit(blk[16:80], &L)
	}
}

// makeQ3 fits x ≈ scale·(L−nmax) with L−nmax in [−nmax, nmax−1], weights
// x², refining the levels one at a time for up to five passes (ggml's
// make_q3_quants with do_rmse). It returns the signed scale; L holds the
// levels offset by nmax.
func makeQ3(nmax int, x []float32, L []int8) float32 {
	max, amax := signedMax(x)
	if amax < groupMaxEps {
		for i := range L[:len(x)] {
			L[i] = 0
		}
		return 0
	}
	iscale := float32(-nmax) / max
	var sumLX, sumL2 float32
	for i, v := range x {
		l := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		L[i] = int8(l)
		w := float32(v * v)
		fl := float32(l)
		sumLX += float32(float32(w*v) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	for itry := 0; itry < 5; itry++ {
		changed := 0
		for i, v := range x {
			w := float32(v * v)
			fl := float32(L[i])
			slx := sumLX - float32(float32(w*v)*fl)
			if slx > 0 {
				sl2 := sumL2 - float32(float32(w*fl)*fl)
				newL := clampInt(nearestInt(float32(v*sl2)/slx), -nmax, nmax-1)
				if newL != int(L[i]) {
					fn := float32(newL)
					slx += float32(float32(w*v) * fn)
					sl2 += float32(float32(w*fn) * fn)
					if sl2 > 0 && float32(float32(slx*slx)*sumL2) > float32(float32(sumLX*sumLX)*sl2) {
						L[i] = int8(newL)
						sumLX, sumL2 = slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range L[:len(x)] {
		L[i] += int8(nmax)
	}
	if sumL2 > 0 {
		return sumLX / sumL2
	}
	return 0
}

// q3KScale is the j-th signed 6-bit scale of a Q3_K block: low nibbles in
// bytes 0–7 (scales 8–15 in the high halves), high bit pairs in bytes 8–11.
func q3KScale(s []byte, j int) int {
	var lo byte
	if j < 8 {
		lo = s[j] & 0xf
	} else {
		lo = s[j-8] >> 4
	}
	return int(lo|(s[8+j%4]>>(2*(j/4))&3)<<4) - 32
}

// Q3_K: sixteen 16-element sub-blocks, x ≈ d·sc·q with q in −4..3 stored as
// two low bits in qs plus a high bit in hmask, and signed 6-bit sc.
func quantQ3_K(x []float32, dst []byte) {
	var L [QK_K]int8
	var scales [16]float32
	for b := 0; b < len(x)/QK_K; b++ {
		xb, blk := x[b*QK_K:b*QK_K+QK_K], dst[b*110:b*110+110]
		hmask, qs, sc := blk[0:32], blk[32:96], blk[96:108]
		var maxScale, amax float32
		for j := 0; j < 16; j++ {
			scales[j] = makeQ3(4, xb[16*j:16*j+16], L[16*j:16*j+16])
			if a := abs32(scales[j]); a > amax {
				amax, maxScale = a, scales[j]
			}
		}
		clear(sc)
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := 0; j < 16; j++ {
				l := uint8(clampInt(int(int8(nearestInt(float32(iscale*scales[j])))), -32, 31) + 32)
				if j < 8 {
					sc[j] = l & 0xf
				} else {
					sc[j-8] |= (l & 0xf) << 4
				}
				sc[j%4+8] |= (l >> 4) << (2 * (j / 4))
			}
			putF16(blk[108:], 1/iscale)
		} else {
			putF16(blk[108:], 0)
		}
		dh := f16At(blk, 108)
		for j := 0; j < 16; j++ {
			d := dh * float32(q3KScale(sc, j))
			if d == 0 {
				continue
			}
			for ii := 0; ii < 16; ii++ {
				l := nearestInt(xb[16*j+ii] / d)
				L[16*j+ii] = int8(clampInt(l, -4, 3) + 4)
			}
		}
		clear(hmask)
		var U [QK_K]uint8
		for j := 0; j < QK_K; j++ {
			v := uint8(L[j])
			if v > 3 {
				hmask[j%32] |= 1 << (j / 32)
				v -= 4
			}
			U[j] = v
		}
		packK2bit(qs, &U)
	}
}
