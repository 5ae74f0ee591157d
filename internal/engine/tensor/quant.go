package tensor

import (
	"encoding/binary"
	"math"
)

// The weight quantizers reproduce ggml's quantize_row_*_ref functions
// operation for operation, so a model quantized here has the same bytes as
// one quantized by llama.cpp without an importance matrix. Explicit float32
// conversions stop the compiler from fusing multiply-adds, which would change
// the rounding.

func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }

func quantF32(x []float32, dst []byte) { putF32Row(x, dst) }

func quantF16(x []float32, dst []byte) {
	for i, v := range x {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
	}
}

func quantBF16(x []float32, dst []byte) {
	for i, v := range x {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
	}
}

// signedMax returns the value of largest magnitude (the first one on ties)
// and its magnitude.
func signedMax(x []float32) (max, amax float32) {
	for _, v := range x {
		if a := abs32(v); amax < a {
			amax, max = a, v
		}
	}
	return max, amax
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

func minMax(x []float32) (min, max float32) {
	min, max = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < min {
			min = v
		}
		if v > max {
			max = v
		}
	}
	return min, max
}

func inverse(d float32) float32 {
	if d != 0 {
		return 1 / d
	}
	return 0
}

func quantQ4_0(x []float32, dst []byte) {
	for b := 0; b < len(x)/32; b++ {
		xb, blk := x[b*32:b*32+32], dst[b*18:b*18+18]
		max, _ := signedMax(xb)
		d := max / -8
		id := inverse(d)
		putF16(blk, d)
		for j := 0; j < 16; j++ {
			// ggml truncates x·id+8.5, which is floor(x·id+0.5)+8 in range.
			q0 := min(15, int(float32(xb[j]*id)+8.5))
			q1 := min(15, int(float32(xb[j+16]*id)+8.5))
			blk[2+j] = byte(q0) | byte(q1)<<4
		}
	}
}

func quantQ4_1(x []float32, dst []byte) {
	for b := 0; b < len(x)/32; b++ {
		xb, blk := x[b*32:b*32+32], dst[b*20:b*20+20]
		lo, hi := minMax(xb)
		d := (hi - lo) / 15
		id := inverse(d)
		putF16(blk, d)
		putF16(blk[2:], lo)
		for j := 0; j < 16; j++ {
			q0 := min(15, int(float32((xb[j]-lo)*id)+0.5))
			q1 := min(15, int(float32((xb[j+16]-lo)*id)+0.5))
			blk[4+j] = byte(q0) | byte(q1)<<4
		}
	}
}

func quantQ5_0(x []float32, dst []byte) {
	for b := 0; b < len(x)/32; b++ {
		xb, blk := x[b*32:b*32+32], dst[b*22:b*22+22]
		max, _ := signedMax(xb)
		d := max / -16
		id := inverse(d)
		putF16(blk, d)
		var qh uint32
		for j := 0; j < 16; j++ {
			q0 := min(31, int(float32(xb[j]*id)+16.5))
			q1 := min(31, int(float32(xb[j+16]*id)+16.5))
			blk[6+j] = byte(q0&0xf) | byte(q1&0xf)<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(blk[2:], qh)
	}
}

func quantQ5_1(x []float32, dst []byte) {
	for b := 0; b < len(x)/32; b++ {
		xb, blk := x[b*32:b*32+32], dst[b*24:b*24+24]
		lo, hi := minMax(xb)
		d := (hi - lo) / 31
		id := inverse(d)
		putF16(blk, d)
		putF16(blk[2:], lo)
		var qh uint32
		for j := 0; j < 16; j++ {
			// ggml does not clamp here; (x-min)·id+0.5 cannot reach 32.
			q0 := min(31, int(float32((xb[j]-lo)*id)+0.5))
			q1 := min(31, int(float32((xb[j+16]-lo)*id)+0.5))
			blk[8+j] = byte(q0&0xf) | byte(q1&0xf)<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(blk[4:], qh)
	}
}

// roundAway is C's roundf: halves round away from zero.
func roundAway(v float32) float32 { return float32(math.Round(float64(v))) }

// quantQ8_0 is quantize_row_q8_0_ref: id = 1/d and halves away from zero.
// Activations use quantQ8_0Act instead (llama.cpp's x86 SIMD rounding).
func quantQ8_0(x []float32, dst []byte) {
	for b := 0; b < len(x)/32; b++ {
		xb, blk := x[b*32:b*32+32], dst[b*34:b*34+34]
		_, amax := signedMax(xb)
		d := amax / 127
		id := inverse(d)
		putF16(blk, d)
		for j, v := range xb {
			blk[2+j] = byte(int8(roundAway(v * id)))
		}
	}
}
