package tensor

import "math"

// The non-linear 4-bit quantizers: IQ4_NL and IQ4_XS as llama.cpp's model
// quantizer writes them without an importance matrix (quantize_iq4_nl and
// quantize_iq4_xs: weights x², fifteen scale candidates), and MXFP4
// (quantize_row_mxfp4_ref), with the same float operations in the same order.

// kvaluesIQ4NL are the sixteen levels of IQ4_NL and IQ4_XS.
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// kvaluesMXFP4 are the E2M1 values doubled, so they are integers; the
// block scale is halved to match (e8m0Half).
var kvaluesMXFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// e8m0Half is half the E8M0 scale 2^(e−127), exact for every e.
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// bestIndexNL is the index of the level nearest x (ties to the upper
// level), by bisection as ggml's best_index_int8.
func bestIndexNL(x float32) int {
	v := &kvaluesIQ4NL
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	ml, mu := 0, 15
	for mu-ml > 1 {
		mav := (ml + mu) / 2
		if x < float32(v[mav]) {
			mu = mav
		} else {
			ml = mav
		}
	}
	if x-float32(v[mu-1]) < float32(v[mu])-x {
		return mu - 1
	}
	return mu
}

// iq4SubScale fits one 32-element sub-block: the initial scale from its
// value of largest magnitude, then the best least-squares scale over 15
// nearby candidates. L receives the levels of the first fit.
func iq4SubScale(xb []float32, L []uint8) float32 {
	max, amax := signedMax(xb)
	if amax < groupMaxEps {
		return 0
	}
	const ntry = 7
	v0 := float32(kvaluesIQ4NL[0])
	d := -max / v0
	id := 1 / d
	var sumQX, sumQ2 float32
	for j, x := range xb {
		l := bestIndexNL(float32(id * x))
		L[j] = uint8(l)
		q := float32(kvaluesIQ4NL[l])
		w := float32(x * x)
		sumQX += float32(float32(w*q) * x)
		sumQ2 += float32(float32(w*q) * q)
	}
	d = 0
	if sumQ2 > 0 {
		d = sumQX / sumQ2
	}
	best := float32(d * sumQX)
	for itry := -ntry; itry <= ntry; itry++ {
		id = float32(itry+int(kvaluesIQ4NL[0])) / max
		sumQX, sumQ2 = 0, 0
		for _, x := range xb {
			q := float32(kvaluesIQ4NL[bestIndexNL(float32(id*x))])
			w := float32(x * x)
			sumQX += float32(float32(w*q) * x)
			sumQ2 += float32(float32(w*q) * q)
		}
		if sumQ2 > 0 && float32(sumQX*sumQX) > float32(best*sumQ2) {
			d = sumQX / sumQ2
			best = float32(d * sumQX)
		}
	}
	return d
}

// packNL stores 32 four-bit indices: elements j and j+16 share byte j.
func packNL(dst []byte, L []uint8) {
	for j := 0; j < 16; j++ {
		dst[j] = L[j] | L[16+j]<<4
	}
}

// IQ4_NL (18 bytes): fp16 d, 16 bytes of level indices; x = d·kvalues[q].
func quantIQ4_NL(x []float32, dst []byte) {
	var L [32]uint8
	for b := 0; b < len(x)/32; b++ {
		xb, blk := x[b*32:b*32+32], dst[b*18:b*18+18]
		d := iq4SubScale(xb, L[:])
		putF16(blk, d)
		id := inverse(d)
		for j, v := range xb {
			L[j] = uint8(bestIndexNL(float32(id * v)))
		}
		packNL(blk[2:], L[:])
	}
}

// IQ4_XS (136 bytes): fp16 d, 2 bytes of high scale bits, 4 bytes of low
// scale nibbles, 128 bytes of indices; sub-block ib has the signed 6-bit
// scale ls−32 and x = d·(ls−32)·kvalues[q].
func quantIQ4_XS(x []float32, dst []byte) {
	var L [32]uint8
	var scales [8]float32
	for b := 0; b < len(x)/QK_K; b++ {
		xb, blk := x[b*QK_K:b*QK_K+QK_K], dst[b*136:b*136+136]
		var maxScale, amaxScale float32
		for ib := 0; ib < 8; ib++ {
			scales[ib] = iq4SubScale(xb[32*ib:32*ib+32], L[:])
			if a := abs32(scales[ib]); a > amaxScale {
				amaxScale, maxScale = a, scales[ib]
			}
		}
		d := -maxScale / 32
		putF16(blk, d)
		id := inverse(d)
		var scalesH uint16
		sl := blk[4:8]
		for ib := 0; ib < 8; ib++ {
			l := clampInt(nearestInt(float32(id*scales[ib])), -32, 31)
			dl := d * float32(l)
			idl := inverse(dl)
			for j, v := range xb[32*ib : 32*ib+32] {
				L[j] = uint8(bestIndexNL(float32(idl * v)))
			}
			packNL(blk[8+16*ib:], L[:])
			l += 32
			if ib%2 == 0 {
				sl[ib/2] = uint8(l & 0xf)
			} else {
				sl[ib/2] |= uint8(l&0xf) << 4
			}
			scalesH |= uint16(l>>4) << (2 * ib)
		}
		blk[2], blk[3] = byte(scalesH), byte(scalesH>>8)
	}
}

// MXFP4 (17 bytes): E8M0 exponent e, 16 bytes of E2M1 codes; x =
// 2^(e−127)·e2m1(q). e puts the block's largest magnitude in the top
// binade of E2M1 (4..6).
func quantMXFP4(x []float32, dst []byte) {
	for b := 0; b < len(x)/32; b++ {
		xb, blk := x[b*32:b*32+32], dst[b*17:b*17+17]
		_, amax := signedMax(xb)
		var e uint8
		if amax > 0 {
			// ggml: (uint8_t)(floorf(log2f(amax)) − 2 + 127); log2f is
			// rounded to float before the floor.
			lg := float32(math.Log2(float64(amax)))
			e = uint8(int(math.Floor(float64(lg))) - 2 + 127)
		}
		d := e8m0Half(e)
		blk[0] = e
		for j := 0; j < 16; j++ {
			blk[1+j] = bestIndexFP4(xb[j], d) | bestIndexFP4(xb[j+16], d)<<4
		}
	}
}

// bestIndexFP4 is the code whose value is nearest x, the first on ties.
func bestIndexFP4(x, d float32) uint8 {
	best := 0
	bestErr := abs32(float32(float32(kvaluesMXFP4[0])*d) - x)
	for i := 1; i < 16; i++ {
		if err := abs32(float32(float32(kvaluesMXFP4[i])*d) - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return uint8(best)
}
