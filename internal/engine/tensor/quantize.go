package tensor

import "math"

// weightQuantizers are the reference quantizers by type; see quant.go and
// quant_k.go. Q8_0 here rounds like ggml's model writer (halves away from
// zero), not like its activation path.
var weightQuantizers = map[Type]QuantizeFunc{
	F32: quantF32, F16: quantF16, BF16: quantBF16,
	Q8_0: quantQ8_0, Q4_0: quantQ4_0, Q4_1: quantQ4_1, Q5_0: quantQ5_0, Q5_1: quantQ5_1,
	Q4_K: quantQ4_K, Q5_K: quantQ5_K, Q6_K: quantQ6_K, Q8_K: quantQ8_K,
	Q2_K: quantQ2_K, Q3_K: quantQ3_K, IQ4_NL: quantIQ4_NL, IQ4_XS: quantIQ4_XS, MXFP4: quantMXFP4,
}

// Quantize converts src (a whole number of blocks of t) into t's stored
// layout with ggml's reference quantizers, so files written from the result
// match llama.cpp's own quantizer without an importance matrix. Block types
// refuse NaN, Inf and values beyond ±MaxBlockValue with a *ValueError.
func Quantize(t Type, src []float32) ([]byte, error) {
	q, ok := weightQuantizers[t]
	if !ok {
		return nil, &UnsupportedError{Op: "quantize", Type: t}
	}
	n, err := RowBytes(t, int64(len(src)))
	if err != nil {
		return nil, &SizeError{Op: "quantize", Type: t, Elems: len(src), What: "src", Got: len(src), Want: -1}
	}
	if t.BlockElems() > 1 {
		for i, v := range src {
			if !(math.Abs(float64(v)) <= MaxBlockValue) { // also catches NaN
				return nil, &ValueError{Type: t, Index: i, Value: v}
			}
		}
	}
	dst := make([]byte, n)
	q(src, dst)
	return dst, nil
}
