package tensor

import (
	"encoding/binary"
	"math"
)

// The row dequantizers below assume the caller checked that src holds
// exactly the blocks of len(dst) elements. They follow ggml's
// dequantize_row_* operation for operation; explicit float32 conversions
// keep the compiler from fusing a multiply and an add, so results are the
// same on every architecture.

func dequantF32(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func dequantF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func dequantBF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func f16At(b []byte, off int) float32 { return F16ToF32(binary.LittleEndian.Uint16(b[off:])) }

// Q4_0: fp16 d, then 16 bytes; low nibbles are elements 0..15, high nibbles 16..31; x = (q-8)·d.
func dequantQ4_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*18 : b*18+18]
		d := f16At(blk, 0)
		y := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			q := blk[2+j]
			y[j] = float32(int(q&0xf)-8) * d
			y[j+16] = float32(int(q>>4)-8) * d
		}
	}
}

// Q4_1: fp16 d, fp16 m, 16 nibble bytes; x = q·d + m.
func dequantQ4_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*20 : b*20+20]
		d, m := f16At(blk, 0), f16At(blk, 2)
		y := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			q := blk[4+j]
			y[j] = float32(float32(q&0xf)*d) + m
			y[j+16] = float32(float32(q>>4)*d) + m
		}
	}
}

// Q5_0: fp16 d, uint32 qh (bit j is the fifth bit of element j), 16 nibble bytes; x = (q-16)·d.
func dequantQ5_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*22 : b*22+22]
		d := f16At(blk, 0)
		qh := binary.LittleEndian.Uint32(blk[2:])
		y := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			q := blk[6+j]
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(int(q&0xf|h0)-16) * d
			y[j+16] = float32(int(q>>4|h1)-16) * d
		}
	}
}

// Q5_1: fp16 d, fp16 m, uint32 qh, 16 nibble bytes; x = q·d + m.
func dequantQ5_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*24 : b*24+24]
		d, m := f16At(blk, 0), f16At(blk, 2)
		qh := binary.LittleEndian.Uint32(blk[4:])
		y := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			q := blk[8+j]
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(float32(q&0xf|h0)*d) + m
			y[j+16] = float32(float32(q>>4|h1)*d) + m
		}
	}
}

// Q8_0: fp16 d, 32 int8; x = q·d.
func dequantQ8_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*34 : b*34+34]
		d := f16At(blk, 0)
		y := dst[b*32 : b*32+32]
		for j := range y {
			y[j] = float32(int8(blk[2+j])) * d
		}
	}
}

// Q8_1: fp16 d, fp16 s (= d·Σq, unused here), 32 int8; x = q·d.
func dequantQ8_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*36 : b*36+36]
		d := f16At(blk, 0)
		y := dst[b*32 : b*32+32]
		for j := range y {
			y[j] = float32(int8(blk[4+j])) * d
		}
	}
}

// scaleMinK4 unpacks the j-th 6-bit scale and min of a Q4_K/Q5_K block from
// its 12 packed bytes (ggml's get_scale_min_k4).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// Q4_K (144 bytes): fp16 d, fp16 dmin, 12 bytes of 6-bit scales/mins for
// eight 32-element sub-blocks, 128 nibble bytes. Each 32-byte group of qs
// holds two sub-blocks: low nibbles first, then high nibbles.
// x = d·sc·q − dmin·m.
func dequantQ4_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QK_K; b++ {
		blk := src[b*144 : b*144+144]
		d, dmin := f16At(blk, 0), f16At(blk, 2)
		scales := blk[4:16]
		q := blk[16:]
		y := dst[b*QK_K : b*QK_K+QK_K]
		for g := 0; g < 4; g++ {
			sc, m := scaleMinK4(2*g, scales)
			d1, m1 := d*float32(sc), dmin*float32(m)
			sc, m = scaleMinK4(2*g+1, scales)
			d2, m2 := d*float32(sc), dmin*float32(m)
			qq := q[32*g : 32*g+32]
			yy := y[64*g : 64*g+64]
			for l := 0; l < 32; l++ {
				yy[l] = float32(d1*float32(qq[l]&0xf)) - m1
				yy[l+32] = float32(d2*float32(qq[l]>>4)) - m2
			}
		}
	}
}

// Q5_K (176 bytes): fp16 d, fp16 dmin, 12 scale bytes, 32 bytes qh (bit 2g
// and 2g+1 of qh[l] are the fifth bits of the two sub-blocks of group g), 128
// nibble bytes laid out as in Q4_K.
func dequantQ5_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QK_K; b++ {
		blk := src[b*176 : b*176+176]
		d, dmin := f16At(blk, 0), f16At(blk, 2)
		scales := blk[4:16]
		qh := blk[16:48]
		ql := blk[48:]
		y := dst[b*QK_K : b*QK_K+QK_K]
		for g := 0; g < 4; g++ {
			sc, m := scaleMinK4(2*g, scales)
			d1, m1 := d*float32(sc), dmin*float32(m)
			sc, m = scaleMinK4(2*g+1, scales)
			d2, m2 := d*float32(sc), dmin*float32(m)
			u1, u2 := byte(1)<<(2*g), byte(2)<<(2*g)
			qq := ql[32*g : 32*g+32]
			yy := y[64*g : 64*g+64]
			for l := 0; l < 32; l++ {
				v1, v2 := qq[l]&0xf, qq[l]>>4
				if qh[l]&u1 != 0 {
					v1 += 16
				}
				if qh[l]&u2 != 0 {
					v2 += 16
				}
				yy[l] = float32(d1*float32(v1)) - m1
				yy[l+32] = float32(d2*float32(v2)) - m2
			}
		}
	}
}

// q6Kvalues unpacks the 256 signed 6-bit quants of a Q6_K block into a.
func q6Kvalues(ql, qh []byte, a *[QK_K]int8) {
	for h := 0; h < 2; h++ {
		l4, hh := ql[64*h:64*h+64], qh[32*h:32*h+32]
		aa := a[128*h : 128*h+128]
		for l := 0; l < 32; l++ {
			aa[l] = int8(l4[l]&0xf|(hh[l]>>0&3)<<4) - 32
			aa[l+32] = int8(l4[l+32]&0xf|(hh[l]>>2&3)<<4) - 32
			aa[l+64] = int8(l4[l]>>4|(hh[l]>>4&3)<<4) - 32
			aa[l+96] = int8(l4[l+32]>>4|(hh[l]>>6&3)<<4) - 32
		}
	}
}

// Q6_K (210 bytes): 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits),
// 16 int8 scales for 16-element sub-blocks, fp16 d; x = d·sc·(q−32).
func dequantQ6_K(src []byte, dst []float32) {
	var a [QK_K]int8
	for b := 0; b < len(dst)/QK_K; b++ {
		blk := src[b*210 : b*210+210]
		d := f16At(blk, 208)
		q6Kvalues(blk[0:128], blk[128:192], &a)
		y := dst[b*QK_K : b*QK_K+QK_K]
		for i := range y {
			y[i] = float32(d*float32(int8(blk[192+i/16]))) * float32(a[i])
		}
	}
}

// Q8_K (292 bytes): float32 d, 256 int8, 16 int16 group sums; x = d·q.
func dequantQ8_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QK_K; b++ {
		blk := src[b*292 : b*292+292]
		d := math.Float32frombits(binary.LittleEndian.Uint32(blk))
		y := dst[b*QK_K : b*QK_K+QK_K]
		for i := range y {
			y[i] = d * float32(int8(blk[4+i]))
		}
	}
}
