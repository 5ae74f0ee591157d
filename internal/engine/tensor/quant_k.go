package tensor

import (
	"encoding/binary"
	"math"
)

// K-quant weight quantizers: ggml's quantize_row_{q4,q5,q6}_K_ref with the
// same scale searches (make_qkx2_quants for Q4_K/Q5_K, make_qx_quants with
// rmse_type 1 for Q6_K), written from the format's definition so that the
// bytes match llama.cpp's quantizer without an importance matrix.

const groupMaxEps = 1e-15

// nearestInt is ggml's nearest_int: round half to even through the float
// mantissa, valid for |f| ≤ 4194303 (its callers stay inside that range).
func nearestInt(f float32) int {
	v := f + 12582912
	return int(int32(math.Float32bits(v)&0x007fffff) - 0x00400000)
}

func sqrt32(f float32) float32 { return float32(math.Sqrt(float64(f))) }

// makeQKX2 fits x ≈ scale·L − min with L in [0, nmax], trying nstep+1
// candidate scales and keeping the weighted least-squares best. It returns
// the scale and the (non-negative) min to subtract. useMAD weighs absolute
// instead of squared errors (ggml's Q2_K search).
func makeQKX2(nmax int, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMAD bool) (float32, float32) {
	n := len(x)
	min, max := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < min {
			min = x[i]
		}
		if x[i] > max {
			max = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if min > 0 {
		min = 0
	}
	if max == min {
		for i := range L[:n] {
			L[i] = 0
		}
		return 0, -min
	}
	iscale := float32(nmax) / (max - min)
	scale := 1 / iscale
	var bestErr float32
	for i := 0; i < n; i++ {
		l := nearestInt(float32(iscale * (x[i] - min)))
		L[i] = uint8(clampInt(l, 0, nmax))
		diff := float32(float32(scale*float32(L[i]))+min) - x[i]
		bestErr += float32(weights[i] * errTerm(diff, useMAD))
	}
	if nstep < 1 {
		return scale, -min
	}
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + float32(nmax)) / (max - min)
		var sumL, sumL2, sumXL float32
		for i := 0; i < n; i++ {
			l := clampInt(nearestInt(float32(iscale*(x[i]-min))), 0, nmax)
			Laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			wl := float32(w * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curErr float32
			for i := 0; i < n; i++ {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - x[i]
				curErr += float32(weights[i] * errTerm(diff, useMAD))
			}
			if curErr < bestErr {
				copy(L[:n], Laux[:n])
				bestErr = curErr
				scale = thisScale
				min = thisMin
			}
		}
	}
	return scale, -min
}

// errTerm is |diff| or diff², as makeQKX2's useMAD asks.
func errTerm(diff float32, useMAD bool) float32 {
	if useMAD {
		return abs32(diff)
	}
	return float32(diff * diff)
}

// clampInt limits v to [lo, hi].
func clampInt(v, lo, hi int) int { return max(lo, min(hi, v)) }

// makeQX fits x ≈ scale·(L−nmax) with L−nmax in [−nmax, nmax−1], weights
// x², trying 19 scales around nmax/max (ggml's make_qx_quants, rmse_type 1).
func makeQX(nmax int, x []float32, L []int8) float32 {
	max, amax := signedMax(x)
	if amax < groupMaxEps {
		for i := range L[:len(x)] {
			L[i] = 0
		}
		return 0
	}
	fnmax := float32(nmax)
	iscale := -fnmax / max
	var sumLX, sumL2 float32
	for i, v := range x {
		l := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		L[i] = int8(l + nmax)
		w := float32(v * v)
		fl := float32(l)
		sumLX += float32(float32(w*v) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := float32(scale * sumLX)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(0.1*float32(is))) / max
		sumLX, sumL2 = 0, 0
		for _, v := range x {
			l := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
			w := float32(v * v)
			fl := float32(l)
			sumLX += float32(float32(w*v) * fl)
			sumL2 += float32(float32(w*fl) * fl)
		}
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			for i, v := range x {
				l := nearestInt(float32(iscale * v))
				L[i] = int8(nmax + clampInt(l, -nmax, nmax-1))
			}
			scale = sumLX / sumL2
			best = float32(scale * sumLX)
		}
	}
	return scale
}

// kSubblockScales runs makeQKX2 on the eight 32-element sub-blocks of a
// super-block with ggml's weights av_x + |x|.
func kSubblockScales(x []float32, nmax int, rmin, rdelta float32, nstep int, L *[QK_K]uint8, scales, mins *[8]float32) (maxScale, maxMin float32) {
	var weights [32]float32
	var laux [32]uint8
	for j := 0; j < 8; j++ {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := sqrt32(sumX2 / 32)
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2(nmax, xs, weights[:], L[32*j:32*j+32], laux[:], rmin, rdelta, nstep, false)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	return maxScale, maxMin
}

// packScalesK4 writes the 6-bit scales and mins of eight sub-blocks into the
// 12-byte Q4_K/Q5_K layout read by scaleMinK4.
func packScalesK4(dst []byte, ls, lm *[8]uint8) {
	for j := 0; j < 8; j++ {
		if j < 4 {
			dst[j] = ls[j]
			dst[j+4] = lm[j]
		} else {
			dst[j+4] = ls[j]&0xf | (lm[j]&0xf)<<4
			dst[j-4] |= (ls[j] >> 4) << 6
			dst[j] |= (lm[j] >> 4) << 6
		}
	}
}

// quantizeKScales turns float sub-block scales and mins into 6-bit codes
// and the two fp16 super-block factors, then re-derives L against the
// rounded scales, as ggml does. L entries of sub-blocks whose rounded scale
// is zero keep the search's values.
func quantizeKScales(x []float32, nmax int, blk []byte, L *[QK_K]uint8, scales, mins *[8]float32, maxScale, maxMin float32) {
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	var ls, lm [8]uint8
	for j := 0; j < 8; j++ {
		ls[j] = min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lm[j] = min(63, uint8(nearestInt(float32(invMin*mins[j]))))
	}
	packScalesK4(blk[4:16], &ls, &lm)
	putF16(blk[0:], maxScale/63)
	putF16(blk[2:], maxMin/63)
	dh, dminh := f16At(blk, 0), f16At(blk, 2)
	for j := 0; j < 8; j++ {
		sc, m := scaleMinK4(j, blk[4:16])
		d := dh * float32(sc)
		if d == 0 {
			continue
		}
		dm := dminh * float32(m)
		for ii := 0; ii < 32; ii++ {
			l := nearestInt((x[32*j+ii] + dm) / d)
			L[32*j+ii] = uint8(clampInt(l, 0, nmax))
		}
	}
}

func quantQ4_K(x []float32, dst []byte) {
	var L [QK_K]uint8
	var scales, mins [8]float32
	for b := 0; b < len(x)/QK_K; b++ {
		xb, blk := x[b*QK_K:b*QK_K+QK_K], dst[b*144:b*144+144]
		clear(blk)
		maxScale, maxMin := kSubblockScales(xb, 15, -1, 0.1, 20, &L, &scales, &mins)
		quantizeKScales(xb, 15, blk, &L, &scales, &mins, maxScale, maxMin)
		q := blk[16:]
		for g := 0; g < 4; g++ {
			for l := 0; l < 32; l++ {
				q[32*g+l] = L[64*g+l] | L[64*g+l+32]<<4
			}
		}
	}
}

func quantQ5_K(x []float32, dst []byte) {
	var L [QK_K]uint8
	var scales, mins [8]float32
	for b := 0; b < len(x)/QK_K; b++ {
		xb, blk := x[b*QK_K:b*QK_K+QK_K], dst[b*176:b*176+176]
		clear(blk)
		maxScale, maxMin := kSubblockScales(xb, 31, -0.5, 0.1, 15, &L, &scales, &mins)
		quantizeKScales(xb, 31, blk, &L, &scales, &mins, maxScale, maxMin)
		qh, ql := blk[16:48], blk[48:]
		for g := 0; g < 4; g++ {
			m1, m2 := byte(1)<<(2*g), byte(2)<<(2*g)
			for j := 0; j < 32; j++ {
				l1, l2 := L[64*g+j], L[64*g+j+32]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				ql[32*g+j] = l1 | l2<<4
			}
		}
	}
}

func quantQ6_K(x []float32, dst []byte) {
	var L [QK_K]int8
	var scales [16]float32
	for b := 0; b < len(x)/QK_K; b++ {
		xb, blk := x[b*QK_K:b*QK_K+QK_K], dst[b*210:b*210+210]
		clear(blk)
		var maxScale, maxAbsScale float32
		for ib := 0; ib < 16; ib++ {
			s := makeQX(32, xb[16*ib:16*ib+16], L[16*ib:16*ib+16])
			scales[ib] = s
			if a := abs32(s); a > maxAbsScale {
				maxAbsScale, maxScale = a, s
			}
		}
		if maxAbsScale < groupMaxEps {
			continue // an all-zero block, d = 0
		}
		iscale := -128 / maxScale
		putF16(blk[208:], 1/iscale)
		for ib := 0; ib < 16; ib++ {
			blk[192+ib] = byte(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
		}
		dh := f16At(blk, 208)
		for j := 0; j < 16; j++ {
			d := dh * float32(int8(blk[192+j]))
			if d == 0 {
				continue
			}
			for ii := 0; ii < 16; ii++ {
				l := clampInt(nearestInt(xb[16*j+ii]/d), -32, 31)
				L[16*j+ii] = int8(l + 32)
			}
		}
		ql, qh := blk[0:128], blk[128:192]
		for h := 0; h < 2; h++ {
			for l := 0; l < 32; l++ {
				o := 128*h + l
				q1, q2, q3, q4 := uint8(L[o]), uint8(L[o+32]), uint8(L[o+64]), uint8(L[o+96])
				ql[64*h+l] = q1&0xf | (q3&0xf)<<4
				ql[64*h+l+32] = q2&0xf | (q4&0xf)<<4
				qh[32*h+l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
			}
		}
	}
}

// quantQ8_K is quantize_row_q8_K_ref, also the activation quantizer for the
// K-quant dot products: iscale = −127/max over the value of largest
// magnitude, q = min(127, round-half-even(iscale·x)), d = 1/iscale, plus the
// sums of each 16 quants.
func quantQ8_K(x []float32, dst []byte) {
	for b := 0; b < len(x)/QK_K; b++ {
		xb, blk := x[b*QK_K:b*QK_K+QK_K], dst[b*292:b*292+292]
		max, amax := signedMax(xb)
		if amax == 0 {
			clear(blk)
			continue
		}
		iscale := -127 / max
		for j, v := range xb {
			blk[4+j] = byte(int8(min(127, nearestInt(float32(iscale*v)))))
		}
		for g := 0; g < 16; g++ {
			var s int
			for _, q := range blk[4+16*g : 4+16*g+16] {
				s += int(int8(q))
			}
			binary.LittleEndian.PutUint16(blk[260+2*g:], uint16(int16(s)))
		}
		binary.LittleEndian.PutUint32(blk, math.Float32bits(1/iscale))
	}
}
