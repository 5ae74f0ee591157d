package tensor

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func gaussian(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

func roundTrip(t *testing.T, typ Type, x []float32) []float32 {
	t.Helper()
	q, err := Quantize(typ, x)
	if err != nil {
		t.Fatalf("Quantize(%s): %v", typ, err)
	}
	if want, _ := RowBytes(typ, int64(len(x))); int64(len(q)) != want {
		t.Fatalf("Quantize(%s) gave %d bytes, want %d", typ, len(q), want)
	}
	y := make([]float32, len(x))
	if err := Dequantize(typ, q, y); err != nil {
		t.Fatal(err)
	}
	return y
}

// Per-block worst-case bounds derived from each format: rounding to the
// nearest level costs half a step, clamping the level opposite the signed
// maximum costs one step (Q4_0, Q5_0), and storing d and m as fp16 costs
// levels·err16(d) + err16(m), where err16 is half an fp16 ulp.
func err16(v float64) float64 { return max(math.Abs(v)/2048, math.Ldexp(1, -25)) }

func TestQuantizeLegacyBlockBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	amaxOf := func(xb []float32) float64 { _, a := signedMax(xb); return float64(a) }
	bounds := []struct {
		typ Type
		fn  func(xb []float32) float64
	}{
		{Q8_0, func(xb []float32) float64 { d := amaxOf(xb) / 127; return d/2 + 127*err16(d) }},
		{Q4_0, func(xb []float32) float64 { d := amaxOf(xb) / 8; return d + 8*err16(d) }},
		{Q5_0, func(xb []float32) float64 { d := amaxOf(xb) / 16; return d + 16*err16(d) }},
		{Q4_1, func(xb []float32) float64 {
			lo, hi := minMax(xb)
			d := float64(hi-lo) / 15
			return d/2 + 15*err16(d) + err16(float64(lo))
		}},
		{Q5_1, func(xb []float32) float64 {
			lo, hi := minMax(xb)
			d := float64(hi-lo) / 31
			return d/2 + 31*err16(d) + err16(float64(lo))
		}},
	}
	for _, bc := range bounds {
		typ, b := bc.typ, bc.fn
		for trial := 0; trial < 200; trial++ {
			x := gaussian(r, 32*(1+trial%4), math.Pow(10, float64(trial%7-3)))
			if trial%5 == 0 { // offset data exercises the min of Q4_1/Q5_1
				for i := range x {
					x[i] += 3 * x[0]
				}
			}
			y := roundTrip(t, typ, x)
			for blk := 0; blk < len(x)/32; blk++ {
				xb := x[32*blk : 32*blk+32]
				lim := b(xb) * (1 + 1e-5)
				for i, v := range xb {
					if e := math.Abs(float64(y[32*blk+i] - v)); e > lim {
						t.Fatalf("%s: element %d error %g > bound %g (x=%g)", typ, 32*blk+i, e, lim, v)
					}
				}
			}
		}
	}
}

// Relative RMS round-trip error on Gaussian data. The limits sit about 20%
// above what ggml's reference quantizers achieve on this data (the llama.cpp
// cross-check shows the bytes are the same as ggml's).
func TestQuantizeRoundTripRMS(t *testing.T) {
	limits := map[Type]float64{
		F32: 0, F16: 2.5e-4, BF16: 2e-3,
		Q8_0: 0.0065, Q4_0: 0.104, Q4_1: 0.095, Q5_0: 0.052, Q5_1: 0.046,
		Q4_K: 0.086, Q5_K: 0.044, Q6_K: 0.021, Q8_K: 0.0084,
		Q2_K: 0.36, Q3_K: 0.18, IQ4_NL: 0.092, IQ4_XS: 0.093, MXFP4: 0.136,
	}
	r := rand.New(rand.NewPCG(5, 6))
	x := gaussian(r, 64*QK_K, 0.02)
	for _, typ := range allTypes {
		e := relRMSErr(roundTrip(t, typ, x), x)
		t.Logf("%-5s relative RMS error %.4g (limit %.4g)", typ, e, limits[typ])
		if e > limits[typ] {
			t.Errorf("%s: relative RMS error %.4g > %.4g", typ, e, limits[typ])
		}
	}
}

func relRMSErr(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(num / den)
}

func TestQuantizeEdgeCases(t *testing.T) {
	for _, typ := range allTypes {
		be := typ.BlockElems()
		n := max(be, 32) * 2
		// All-zero and constant blocks must not divide by zero.
		for _, c := range []float32{0, 1, -3} {
			x := make([]float32, n)
			for i := range x {
				x[i] = c
			}
			y := roundTrip(t, typ, x)
			for i := range y {
				if math.IsNaN(float64(y[i])) || math.Abs(float64(y[i]-c)) > math.Abs(float64(c))*0.02 {
					t.Fatalf("%s constant %g: element %d = %g", typ, c, i, y[i])
				}
			}
		}
		// Every whole number of blocks, including none.
		for nb := 0; nb <= 3; nb++ {
			if _, err := Quantize(typ, make([]float32, nb*be)); err != nil {
				t.Errorf("%s, %d blocks: %v", typ, nb, err)
			}
		}
		if be > 1 {
			var se *SizeError
			if _, err := Quantize(typ, make([]float32, be+1)); !errors.As(err, &se) {
				t.Errorf("%s partial block: got %v, want *SizeError", typ, err)
			}
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 65505, -1e6} {
				x := make([]float32, be)
				x[be-1] = float32(bad)
				var nf *ValueError
				if _, err := Quantize(typ, x); !errors.As(err, &nf) || nf.Index != be-1 {
					t.Errorf("%s with %g: got %v, want *ValueError at %d", typ, bad, err, be-1)
				}
			}
		}
	}
	if _, err := Quantize(IQ2_XS, make([]float32, 256)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("IQ2_XS: got %v, want ErrUnsupported", err)
	}
}

func TestNearestInt(t *testing.T) {
	for _, tc := range []struct {
		f    float32
		want int
	}{{0, 0}, {0.5, 0}, {1.5, 2}, {2.5, 2}, {-0.5, 0}, {-1.5, -2}, {-2.5, -2}, {2.4999, 2}, {-7.6, -8}, {4194303, 4194303}} {
		if got := nearestInt(tc.f); got != tc.want {
			t.Errorf("nearestInt(%g) = %d, want %d", tc.f, got, tc.want)
		}
	}
}
