package tensor

// Dequantizers of the 2–4-bit types big mixture-of-experts models ship in,
// following ggml's dequantize_row_* operation for operation.

// Q2_K (84 bytes): 16 scale bytes (low nibble sc, high nibble m, one per
// 16-element sub-block), 64 bytes of 2-bit quants (packK2bit's layout),
// fp16 d, fp16 dmin; x = d·sc·q − dmin·m.
func dequantQ2_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QK_K; b++ {
		blk := src[b*84 : b*84+84]
		d, dmin := f16At(blk, 80), f16At(blk, 82)
		sc, q := blk[0:16], blk[16:80]
		y := dst[b*QK_K : b*QK_K+QK_K]
		for g := 0; g < 16; g++ { // 16-element sub-blocks
			h, j, l0 := g/8, g%8/2, 16*(g%2)
			s := sc[g]
			dl, ml := d*float32(s&0xf), dmin*float32(s>>4)
			qq, yy := q[32*h+l0:32*h+l0+16], y[16*g:16*g+16]
			for l := range yy {
				yy[l] = float32(dl*float32(qq[l]>>(2*j)&3)) - ml
			}
		}
	}
}

// q3KValues unpacks the 256 quants of a Q3_K block (−4..3): two low bits
// from qs as in packK2bit, minus 4 where the hmask bit is clear.
func q3KValues(hm, qs []byte, a *[QK_K]int8) {
	for h := 0; h < 2; h++ {
		for j := 0; j < 4; j++ {
			shift, m := 2*j, byte(1)<<(4*h+j)
			qq, aa := qs[32*h:32*h+32], a[128*h+32*j:128*h+32*j+32]
			for l := range aa {
				v := int8(qq[l] >> shift & 3)
				if hm[l]&m == 0 {
					v -= 4
				}
				aa[l] = v
			}
		}
	}
}

// Q3_K (110 bytes): 32 bytes hmask, 64 bytes low bits, 12 bytes of signed
// 6-bit scales (q3KScale), fp16 d; x = d·sc·q.
func dequantQ3_K(src []byte, dst []float32) {
	var a [QK_K]int8
	for b := 0; b < len(dst)/QK_K; b++ {
		blk := src[b*110 : b*110+110]
		d := f16At(blk, 108)
		q3KValues(blk[0:32], blk[32:96], &a)
		y := dst[b*QK_K : b*QK_K+QK_K]
		for j := 0; j < 16; j++ {
			dl := d * float32(q3KScale(blk[96:108], j))
			for l := 0; l < 16; l++ {
				y[16*j+l] = dl * float32(a[16*j+l])
			}
		}
	}
}

// IQ4_NL (18 bytes): fp16 d, 16 bytes of indices (element j low nibble,
// j+16 high); x = d·kvalues[q].
func dequantIQ4_NL(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*18 : b*18+18]
		d := f16At(blk, 0)
		y := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			y[j] = d * float32(kvaluesIQ4NL[blk[2+j]&0xf])
			y[j+16] = d * float32(kvaluesIQ4NL[blk[2+j]>>4])
		}
	}
}

// iq4XSScale is the 6-bit scale ls of sub-block ib, less 32.
func iq4XSScale(blk []byte, ib int) int {
	h := uint16(blk[2]) | uint16(blk[3])<<8
	return int(blk[4+ib/2]>>(4*(ib%2))&0xf|uint8(h>>(2*ib)&3)<<4) - 32
}

// IQ4_XS (136 bytes): fp16 d, scales (iq4XSScale), then eight IQ4_NL-style
// 16-byte index groups; x = d·(ls−32)·kvalues[q].
func dequantIQ4_XS(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QK_K; b++ {
		blk := src[b*136 : b*136+136]
		d := f16At(blk, 0)
		for ib := 0; ib < 8; ib++ {
			dl := d * float32(iq4XSScale(blk, ib))
			qs := blk[8+16*ib : 8+16*ib+16]
			y := dst[b*QK_K+32*ib : b*QK_K+32*ib+32]
			for j := 0; j < 16; j++ {
				y[j] = dl * float32(kvaluesIQ4NL[qs[j]&0xf])
				y[j+16] = dl * float32(kvaluesIQ4NL[qs[j]>>4])
			}
		}
	}
}

// MXFP4 (17 bytes): E8M0 e, 16 bytes of E2M1 codes (element j low nibble,
// j+16 high); x = e8m0Half(e)·kvaluesMXFP4[q].
func dequantMXFP4(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*17 : b*17+17]
		d := e8m0Half(blk[0])
		y := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			y[j] = float32(kvaluesMXFP4[blk[1+j]&0xf]) * d
			y[j+16] = float32(kvaluesMXFP4[blk[1+j]>>4]) * d
		}
	}
}
