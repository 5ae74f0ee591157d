package tensor

import "encoding/binary"

// Generic dot products of the 2–4-bit types against their activations,
// each following ggml's ggml_vec_dot_*_generic: the same integer sums and
// the same float operations in the same order, so results equal
// llama.cpp's reference path bit for bit.

// Q2_K · Q8_K: one float sum; per block d·Σ sc·Σq·y minus dmin·Σ m·bsum.
func vecDotQ2_K(row, act []byte, n int) float32 {
	var sumf float32
	for b := 0; b < n/QK_K; b++ {
		x, y := row[b*84:b*84+84], act[b*292:b*292+292]
		sc, q2, q8 := x[0:16], x[16:80], y[4:260]
		summs := 0
		for j := 0; j < 16; j++ {
			summs += int(int16(binary.LittleEndian.Uint16(y[260+2*j:]))) * int(sc[j]>>4)
		}
		yd := q8Kd(y)
		dall := yd * f16At(x, 80)
		dmin := yd * f16At(x, 82)
		isum := 0
		for g := 0; g < 16; g++ { // 16-element sub-blocks
			h, j, l0 := g/8, g%8/2, 16*(g%2)
			qq, yy := q2[32*h+l0:32*h+l0+16], q8[16*g:16*g+16]
			isuml := 0
			for k, y := range yy {
				isuml += int(int8(y)) * int(qq[k]>>(2*j)&3)
			}
			isum += int(sc[g]&0xf) * isuml
		}
		sumf += float32(dall*float32(isum)) - float32(dmin*float32(summs))
	}
	return sumf
}

// Q3_K · Q8_K: eight integer lanes per block as ggml's generic code.
func vecDotQ3_K(row, act []byte, n int) float32 {
	var sums [8]float32
	var a [QK_K]int8
	for b := 0; b < n/QK_K; b++ {
		x, y := row[b*110:b*110+110], act[b*292:b*292+292]
		q3KValues(x[0:32], x[32:96], &a)
		q8 := y[4:260]
		var aux [8]int32
		for j := 0; j < 16; j++ {
			s := int32(q3KScale(x[96:108], j))
			aa, yy := a[16*j:16*j+16], q8[16*j:16*j+16]
			for l := range aa {
				aux[l&7] += s * int32(int16(int8(yy[l]))*int16(aa[l]))
			}
		}
		kAccumulate(&sums, f16At(x, 108)*q8Kd(y), &aux)
	}
	var sumf float32
	for _, s := range sums {
		sumf += s
	}
	return sumf
}

// nlBlockSum is Σ y·kvalues[q] over one 32-element block of indices.
func nlBlockSum(qs, q8 []byte, kv *[16]int8) int {
	s1, s2 := 0, 0
	for j := 0; j < 16; j++ {
		s1 += int(int8(q8[j])) * int(kv[qs[j]&0xf])
		s2 += int(int8(q8[j+16])) * int(kv[qs[j]>>4])
	}
	return s1 + s2
}

// IQ4_NL · Q8_0.
func vecDotIQ4_NL(row, act []byte, n int) float32 {
	var sumf float32
	for b := 0; b < n/32; b++ {
		x, y := row[b*18:b*18+18], act[b*34:b*34+34]
		d := f16At(y, 0) * f16At(x, 0)
		sumf += float32(d * float32(nlBlockSum(x[2:18], y[2:34], &kvaluesIQ4NL)))
	}
	return sumf
}

// IQ4_XS · Q8_K: one float multiply-add per 32-element sub-block.
func vecDotIQ4_XS(row, act []byte, n int) float32 {
	var sumf float32
	for b := 0; b < n/QK_K; b++ {
		x, y := row[b*136:b*136+136], act[b*292:b*292+292]
		d4d8 := f16At(x, 0) * q8Kd(y)
		for ib := 0; ib < 8; ib++ {
			dl := d4d8 * float32(iq4XSScale(x, ib))
			sumf += float32(dl * float32(nlBlockSum(x[8+16*ib:8+16*ib+16], y[4+32*ib:4+32*ib+32], &kvaluesIQ4NL)))
		}
	}
	return sumf
}

// MXFP4 · Q8_0.
func vecDotMXFP4(row, act []byte, n int) float32 {
	var sumf float32
	for b := 0; b < n/32; b++ {
		x, y := row[b*17:b*17+17], act[b*34:b*34+34]
		d := f16At(y, 0) * e8m0Half(x[0])
		sumf += float32(d * float32(nlBlockSum(x[1:17], y[2:34], &kvaluesMXFP4)))
	}
	return sumf
}
