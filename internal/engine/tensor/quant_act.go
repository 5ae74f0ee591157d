package tensor

import (
	"encoding/binary"
	"math"
)

// Activation quantizers: the rounding llama.cpp's x86 SIMD path applies to
// the activations of a matmul before its integer dot products. They differ
// from the weight quantizers in how they round (half to even via
// _mm256_round_ps, scale 127/amax instead of 1/d).

func roundEven(v float32) float32 { return float32(math.RoundToEven(float64(v))) }

// quantQ8_0Act: per 32 values d = amax/127 (stored fp16) and
// q = round-half-even(x·(127/amax)).
func quantQ8_0Act(x []float32, dst []byte) {
	for b := 0; b < len(x)/32; b++ {
		xb, blk := x[b*32:b*32+32], dst[b*34:b*34+34]
		_, amax := signedMax(xb)
		putF16(blk, amax/127)
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for j, v := range xb {
			blk[2+j] = byte(int8(roundEven(v * id)))
		}
	}
}

// quantQ8_1Act is quantQ8_0Act plus s = fp16(d·Σq), with d the unrounded
// float amax/127.
func quantQ8_1Act(x []float32, dst []byte) {
	for b := 0; b < len(x)/32; b++ {
		xb, blk := x[b*32:b*32+32], dst[b*36:b*36+36]
		_, amax := signedMax(xb)
		d := amax / 127
		putF16(blk, d)
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		sum := 0
		for j, v := range xb {
			q := int8(roundEven(v * id))
			blk[4+j] = byte(q)
			sum += int(q)
		}
		putF16(blk[2:], d*float32(sum))
	}
}

// QuantizeQ8_0Act writes x (a whole number of 32-value blocks) into dst as
// Q8_0 with llama.cpp's x86 activation rounding.
func QuantizeQ8_0Act(x []float32, dst []byte) error {
	if err := checkRow("quantize activations", Q8_0, len(x), len(dst), "dst"); err != nil {
		return err
	}
	quantQ8_0Act(x, dst)
	return nil
}

// QuantizeQ8_1Act writes x into dst as Q8_1 (Q8_0 plus s = fp16(d·Σq)).
func QuantizeQ8_1Act(x []float32, dst []byte) error {
	if err := checkRow("quantize activations", Q8_1, len(x), len(dst), "dst"); err != nil {
		return err
	}
	quantQ8_1Act(x, dst)
	return nil
}

// QuantizeQ8K writes x (a whole number of 256-value blocks) into dst as
// Q8_K: float32 d, int8 qs[256], int16 bsums[16].
func QuantizeQ8K(x []float32, dst []byte) error {
	if err := checkRow("quantize activations", Q8_K, len(x), len(dst), "dst"); err != nil {
		return err
	}
	quantQ8_K(x, dst)
	return nil
}

func putF32Row(x []float32, dst []byte) {
	for i, v := range x {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}
