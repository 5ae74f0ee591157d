package model

import "math"

// A quantized K/V cache holds keys and values rotated by an orthonormal
// Walsh-Hadamard matrix, as llama.cpp's does (its attn_rot_k/attn_rot_v):
// the rotation spreads an outlier element over its whole chunk, so the
// block's scale no longer follows one large value and quantization loses
// less. Scores are unchanged when the queries are rotated with the keys
// (H is orthonormal); the attention output, a mix of rotated values, is
// rotated back (H·H = I).

// rotationSizes are the chunk sizes llama.cpp rotates by for a cache of
// head dimension hd whose elements are block-quantized: keys (and queries)
// by the largest power of two dividing hd, values by 64; 0 when hd is not a
// multiple of 64, where llama.cpp does not rotate.
func rotationSizes(hd int, quantized bool) (k, v int) {
	if !quantized || hd <= 0 || hd%64 != 0 {
		return 0, 0
	}
	k = 64
	for hd%(2*k) == 0 {
		k *= 2
	}
	return k, 64
}

// rotate applies the orthonormal Hadamard transform to every n-element
// chunk of x in place, in the order of operations of ggml's CPU fast
// Walsh-Hadamard transform (scale first, then butterflies of growing span),
// so the result is bit for bit llama.cpp's.
func rotate(x []float32, n int) {
	scale := 1 / float32(math.Sqrt(float64(n)))
	for c := 0; c+n <= len(x); c += n {
		r := x[c : c+n]
		for j := range r {
			r[j] *= scale
		}
		for span := 1; span < n; span <<= 1 {
			for i := 0; i < n; i += 2 * span {
				for j := i; j < i+span; j++ {
					u, v := r[j], r[j+span]
					r[j], r[j+span] = u+v, u-v
				}
			}
		}
	}
}
