package tensor

// QuantizeStore writes x into dst in type t the way ggml's CPU backend
// converts float rows it copies into a tensor of type t (its from_float, as
// llama.cpp does when it stores keys and values into a quantized KV cache):
// F32 and F16 as they are rounded, Q8_0 with the activation rounding (half
// to even, scale 127/amax), Q4_0 with the reference quantizer. dst must be
// RowBytes(t, len(x)) bytes.
func (k Kernels) QuantizeStore(t Type, x []float32, dst []byte) error {
	var q QuantizeFunc
	switch t {
	case F32, F16, Q8_0:
		q = k.table().quantizeAct[t]
	case Q4_0:
		q = quantQ4_0
	default:
		return &UnsupportedError{Op: "quantize store", Type: t}
	}
	if err := checkRow("quantize store", t, len(x), len(dst), "dst"); err != nil {
		return err
	}
	q(x, dst)
	return nil
}
