package tensor

import "math"

// F16ToF32 widens an IEEE binary16 value. The conversion is exact; NaN
// payloads and signed zeros are kept.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		// Zero or subnormal: mant·2^-24 is exact in float32.
		f := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(f))
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	default:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	}
}

// F32ToF16 rounds to the nearest binary16, ties to even, as ggml's
// GGML_FP32_TO_FP16 does: values past the largest half overflow to ±Inf,
// tiny values become signed subnormals or zero, and every NaN becomes the
// canonical quiet NaN 0x7e00 with its sign kept.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	abs := b & 0x7fffffff
	switch {
	case abs > 0x7f800000:
		return sign | 0x7e00
	case abs >= 0x477ff000: // 65520, halfway from 65504 to 65536, ties up to Inf
		return sign | 0x7c00
	case abs >= 0x38800000: // 2^-14: normal half
		m := abs - 112<<23 // rebias the exponent from 127 to 15
		m += 0x0fff + (m>>13)&1
		return sign | uint16(m>>13)
	case abs < 0x33000000: // below 2^-25: rounds to zero
		return sign
	default: // subnormal half: count units of 2^-24
		e := abs >> 23
		mant := abs&0x7fffff | 0x800000
		shift := 126 - e // 14..24
		q := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || rem == half && q&1 == 1 {
			q++
		}
		return sign | uint16(q)
	}
}

// BF16ToF32 widens a bfloat16 value; the conversion is exact.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds to the nearest bfloat16, ties to even, as ggml's
// GGML_FP32_TO_BF16 does: subnormals are kept, NaNs are made quiet with the
// upper payload bits kept.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}
