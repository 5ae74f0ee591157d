package tensor

import (
	"encoding/binary"
	"math"
)

// Generic integer dot products between a weight row and activations already
// in the weight's vec-dot type. Each follows ggml's scalar
// ggml_vec_dot_*_generic: integer sums per block, then one float
// multiply-add per block in the same order, so results match llama.cpp's
// reference path bit for bit and its SIMD paths closely.

func vecDotF32(row, act []byte, n int) float32 {
	var sum float64
	for i := 0; i < n; i++ {
		w := math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))
		a := math.Float32frombits(binary.LittleEndian.Uint32(act[4*i:]))
		sum += float64(w * a)
	}
	return float32(sum)
}

func vecDotF16(row, act []byte, n int) float32 {
	var sum float64
	for i := 0; i < n; i++ {
		w := F16ToF32(binary.LittleEndian.Uint16(row[2*i:]))
		a := F16ToF32(binary.LittleEndian.Uint16(act[2*i:]))
		sum += float64(w * a) // exact: 11-bit × 11-bit significands
	}
	return float32(sum)
}

func vecDotBF16(row, act []byte, n int) float32 {
	var sum float64
	for i := 0; i < n; i++ {
		w := BF16ToF32(binary.LittleEndian.Uint16(row[2*i:]))
		a := BF16ToF32(binary.LittleEndian.Uint16(act[2*i:]))
		sum += float64(w * a)
	}
	return float32(sum)
}

func vecDotQ8_0(row, act []byte, n int) float32 {
	var sumf float32
	for b := 0; b < n/32; b++ {
		x, y := row[b*34:b*34+34], act[b*34:b*34+34]
		sumi := 0
		for j := 0; j < 32; j++ {
			sumi += int(int8(x[2+j])) * int(int8(y[2+j]))
		}
		sumf += float32(sumi) * float32(f16At(x, 0)*f16At(y, 0))
	}
	return sumf
}

func vecDotQ4_0(row, act []byte, n int) float32 {
	var sumf float32
	for b := 0; b < n/32; b++ {
		x, y := row[b*18:b*18+18], act[b*34:b*34+34]
		sumi0, sumi1 := 0, 0
		for j := 0; j < 16; j++ {
			q := x[2+j]
			sumi0 += (int(q&0xf) - 8) * int(int8(y[2+j]))
			sumi1 += (int(q>>4) - 8) * int(int8(y[2+j+16]))
		}
		sumf += float32(float32(sumi0+sumi1)*f16At(x, 0)) * f16At(y, 0)
	}
	return sumf
}

func vecDotQ4_1(row, act []byte, n int) float32 {
	var sumf float32
	for b := 0; b < n/32; b++ {
		x, y := row[b*20:b*20+20], act[b*36:b*36+36]
		sumi0, sumi1 := 0, 0
		for j := 0; j < 16; j++ {
			q := x[4+j]
			sumi0 += int(q&0xf) * int(int8(y[4+j]))
			sumi1 += int(q>>4) * int(int8(y[4+j+16]))
		}
		dd := f16At(x, 0) * f16At(y, 0)
		ms := f16At(x, 2) * f16At(y, 2)
		sumf += float32(float32(dd*float32(sumi0+sumi1)) + ms)
	}
	return sumf
}

func vecDotQ5_0(row, act []byte, n int) float32 {
	var sumf float32
	for b := 0; b < n/32; b++ {
		x, y := row[b*22:b*22+22], act[b*34:b*34+34]
		qh := binary.LittleEndian.Uint32(x[2:])
		sumi0, sumi1 := 0, 0
		for j := 0; j < 16; j++ {
			q := x[6+j]
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			sumi0 += (int(q&0xf|h0) - 16) * int(int8(y[2+j]))
			sumi1 += (int(q>>4|h1) - 16) * int(int8(y[2+j+16]))
		}
		sumf += float32(f16At(x, 0)*f16At(y, 0)) * float32(sumi0+sumi1)
	}
	return sumf
}

func vecDotQ5_1(row, act []byte, n int) float32 {
	var sumf float32
	for b := 0; b < n/32; b++ {
		x, y := row[b*24:b*24+24], act[b*36:b*36+36]
		qh := binary.LittleEndian.Uint32(x[4:])
		sumi0, sumi1 := 0, 0
		for j := 0; j < 16; j++ {
			q := x[8+j]
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			sumi0 += int(q&0xf|h0) * int(int8(y[4+j]))
			sumi1 += int(q>>4|h1) * int(int8(y[4+j+16]))
		}
		dd := f16At(x, 0) * f16At(y, 0)
		ms := f16At(x, 2) * f16At(y, 2)
		sumf += float32(float32(dd*float32(sumi0+sumi1)) + ms)
	}
	return sumf
}

func q8Kd(y []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(y)) }

// kAccumulate finishes a K-quant block the way ggml's generic code does:
// eight float lanes, each the block's d times the integer lane sum, summed
// across lanes only at the very end of the row.
func kAccumulate(sums *[8]float32, d float32, aux *[8]int32) {
	for l := range sums {
		sums[l] += float32(d * float32(aux[l]))
	}
}

func vecDotQ4_K(row, act []byte, n int) float32 {
	var sums [8]float32
	var sumf float32
	for b := 0; b < n/QK_K; b++ {
		x, y := row[b*144:b*144+144], act[b*292:b*292+292]
		scales, q4, q8 := x[4:16], x[16:144], y[4:260]
		var aux [8]int32
		for g := 0; g < 4; g++ {
			sc1, _ := scaleMinK4(2*g, scales)
			sc2, _ := scaleMinK4(2*g+1, scales)
			qq, yy := q4[32*g:32*g+32], q8[64*g:64*g+64]
			for l := 0; l < 32; l++ {
				aux[l&7] += int32(sc1) * int32(int8(yy[l])) * int32(qq[l]&0xf)
				aux[l&7] += int32(sc2) * int32(int8(yy[l+32])) * int32(qq[l]>>4)
			}
		}
		var sumi int32
		for j := 0; j < 16; j++ {
			_, m := scaleMinK4(j/2, scales)
			sumi += int32(int16(binary.LittleEndian.Uint16(y[260+2*j:]))) * int32(m)
		}
		yd := q8Kd(y)
		kAccumulate(&sums, f16At(x, 0)*yd, &aux)
		sumf -= float32(float32(f16At(x, 2)*yd) * float32(sumi))
	}
	for _, s := range sums {
		sumf += s
	}
	return sumf
}

func vecDotQ5_K(row, act []byte, n int) float32 {
	var sums [8]float32
	var sumf float32
	for b := 0; b < n/QK_K; b++ {
		x, y := row[b*176:b*176+176], act[b*292:b*292+292]
		scales, qh, ql, q8 := x[4:16], x[16:48], x[48:176], y[4:260]
		var aux [8]int32
		for g := 0; g < 4; g++ {
			sc1, _ := scaleMinK4(2*g, scales)
			sc2, _ := scaleMinK4(2*g+1, scales)
			u1, u2 := byte(1)<<(2*g), byte(2)<<(2*g)
			qq, yy := ql[32*g:32*g+32], q8[64*g:64*g+64]
			for l := 0; l < 32; l++ {
				v1, v2 := int32(qq[l]&0xf), int32(qq[l]>>4)
				if qh[l]&u1 != 0 {
					v1 += 16
				}
				if qh[l]&u2 != 0 {
					v2 += 16
				}
				aux[l&7] += int32(sc1) * int32(int8(yy[l])) * v1
				aux[l&7] += int32(sc2) * int32(int8(yy[l+32])) * v2
			}
		}
		var sumi int32
		for j := 0; j < 16; j++ {
			_, m := scaleMinK4(j/2, scales)
			sumi += int32(int16(binary.LittleEndian.Uint16(y[260+2*j:]))) * int32(m)
		}
		yd := q8Kd(y)
		kAccumulate(&sums, f16At(x, 0)*yd, &aux)
		sumf -= float32(float32(f16At(x, 2)*yd) * float32(sumi))
	}
	for _, s := range sums {
		sumf += s
	}
	return sumf
}

func vecDotQ6_K(row, act []byte, n int) float32 {
	var sums [8]float32
	var a [QK_K]int8
	for b := 0; b < n/QK_K; b++ {
		x, y := row[b*210:b*210+210], act[b*292:b*292+292]
		q6Kvalues(x[0:128], x[128:192], &a)
		q8 := y[4:260]
		var aux [8]int32
		for i := 0; i < QK_K; i++ {
			aux[i&7] += int32(int8(x[192+i/16])) * int32(int8(q8[i])) * int32(a[i])
		}
		kAccumulate(&sums, f16At(x, 208)*q8Kd(y), &aux)
	}
	var sumf float32
	for _, s := range sums {
		sumf += s
	}
	return sumf
}
