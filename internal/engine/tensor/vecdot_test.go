package tensor

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

var dotTypes = []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4}

func TestVecDotType(t *testing.T) {
	want := map[Type]Type{
		F32: F32, F16: F16, BF16: BF16, Q8_0: Q8_0, Q4_0: Q8_0, Q5_0: Q8_0,
		Q4_1: Q8_1, Q5_1: Q8_1, Q4_K: Q8_K, Q5_K: Q8_K, Q6_K: Q8_K,
		Q2_K: Q8_K, Q3_K: Q8_K, IQ4_XS: Q8_K, IQ4_NL: Q8_0, MXFP4: Q8_0,
	}
	for typ, w := range want {
		if got := VecDotType(typ); got != w {
			t.Errorf("VecDotType(%s) = %s, want %s", typ, got, w)
		}
	}
}

// exactDot is Σ w·a in float64 plus Σ|w·a|, the scale of rounding error.
func exactDot(w, a []float32) (sum, mag float64) {
	for i := range w {
		p := float64(w[i]) * float64(a[i])
		sum += p
		mag += math.Abs(p)
	}
	return sum, mag
}

// VecDot on converted activations must equal, up to float rounding, the
// exact dot of the dequantized weights with the dequantized activations; and
// DotF32 on those rounded activations must agree with both.
func TestVecDotAgreesWithDequantizedDot(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, typ := range dotTypes {
		for _, blocks := range []int{1, 2, 3, 7} {
			n := blocks * max(typ.BlockElems(), VecDotType(typ).BlockElems())
			if typ.BlockElems() == 1 {
				n = blocks*32 + 5 // plain types take any length
			}
			w := gaussian(r, n, 0.05)
			x := gaussian(r, n, 1)
			row, err := Quantize(typ, w)
			if err != nil {
				t.Fatal(err)
			}
			at := VecDotType(typ)
			actBytes, _ := RowBytes(at, int64(n))
			act := make([]byte, actBytes)
			if err := QuantizeAct(typ, x, act); err != nil {
				t.Fatal(err)
			}
			wd := make([]float32, n)
			xr := make([]float32, n)
			if err := Dequantize(typ, row, wd); err != nil {
				t.Fatal(err)
			}
			if err := Dequantize(at, act, xr); err != nil {
				t.Fatal(err)
			}
			want, mag := exactDot(wd, xr)
			got := VecDot(typ, row, act, n)
			ref := DotF32(typ, row, xr)
			tol := mag * 4e-6
			// Q4_1/Q5_1 · Q8_1 uses the stored s = fp16(d·Σq) for the min
			// term, as llama.cpp does, instead of Σ of the rounded values.
			wantVec := want + q8_1MinCorrection(typ, row, act, xr)
			if math.Abs(float64(got)-wantVec) > tol {
				t.Errorf("%s n=%d: VecDot = %g, exact dot of dequantized operands = %g (tol %g)", typ, n, got, wantVec, tol)
			}
			if math.Abs(float64(ref)-want) > tol {
				t.Errorf("%s n=%d: DotF32 on rounded activations = %g, want %g (tol %g)", typ, n, ref, want, tol)
			}
			// And against the unrounded activations: the activation rounding
			// is small next to the weights' own quantization error.
			full, fmag := exactDot(wd, x)
			if d := math.Abs(float64(DotF32(typ, row, x)) - full); d > fmag*4e-6 {
				t.Errorf("%s n=%d: DotF32 = %g, exact %g", typ, n, DotF32(typ, row, x), full)
			}
			if d := math.Abs(float64(got) - full); d > fmag*0.02 {
				t.Errorf("%s n=%d: VecDot %g is %g away from the float dot %g", typ, n, got, d, full)
			}
		}
	}
}

// q8_1MinCorrection is Σ over blocks of m·(s − Σ xr): what the stored s
// changes relative to the dot of the dequantized operands.
func q8_1MinCorrection(typ Type, row, act []byte, xr []float32) float64 {
	if VecDotType(typ) != Q8_1 {
		return 0
	}
	var c float64
	for b := 0; b < len(xr)/32; b++ {
		m := float64(f16At(row[b*typ.BlockBytes():], 2))
		s := float64(f16At(act[b*36:], 2))
		var sum float64
		for _, v := range xr[32*b : 32*b+32] {
			sum += float64(v)
		}
		c += m * (s - sum)
	}
	return c
}

func TestQuantizeQ8_0ActRounding(t *testing.T) {
	// amax = 127 makes id = 1, so the quants are x rounded half to even
	// (ggml's scalar reference would round 2.5 to 3).
	x := make([]float32, 32)
	copy(x, []float32{127, 2.5, 3.5, -2.5, -3.5, 0.5, 1.5, -126.5})
	dst := make([]byte, 34)
	if err := QuantizeQ8_0Act(x, dst); err != nil {
		t.Fatal(err)
	}
	want := []int8{127, 2, 4, -2, -4, 0, 2, -126}
	for i, w := range want {
		if got := int8(dst[2+i]); got != w {
			t.Errorf("q[%d] = %d, want %d", i, got, w)
		}
	}
	if d := F16ToF32(binary.LittleEndian.Uint16(dst)); d != 1 {
		t.Errorf("d = %g, want 1", d)
	}

	// Q8_1 adds s = fp16(d·Σq) with d the unrounded amax/127.
	x1 := gaussian(rand.New(rand.NewPCG(1, 1)), 64, 1)
	q1 := make([]byte, 72)
	if err := QuantizeQ8_1Act(x1, q1); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 2; b++ {
		blk := q1[36*b:]
		_, amax := signedMax(x1[32*b : 32*b+32])
		sum := 0
		for j := 0; j < 32; j++ {
			q := int8(blk[4+j])
			want := int8(math.RoundToEven(float64(x1[32*b+j] * (127 / amax))))
			if q != want {
				t.Fatalf("block %d q[%d] = %d, want %d", b, j, q, want)
			}
			sum += int(q)
		}
		if s := binary.LittleEndian.Uint16(blk[2:]); s != F32ToF16(amax/127*float32(sum)) {
			t.Errorf("block %d s = %#04x, want fp16(%g)", b, s, amax/127*float32(sum))
		}
	}
}

func TestQuantizeQ8K(t *testing.T) {
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(i%17) - 8
	}
	x[3] = -12.7 // largest magnitude, negative: iscale = −127/−12.7 = 10
	x[4] = 0.25  // 2.5 → 2 (half to even)
	x[5] = 0.35  // 3.5 → 4
	dst := make([]byte, 292)
	if err := QuantizeQ8K(x, dst); err != nil {
		t.Fatal(err)
	}
	iscale := float32(-127) / float32(-12.7)
	if d := math.Float32frombits(binary.LittleEndian.Uint32(dst)); d != 1/iscale {
		t.Errorf("d = %g, want %g", d, 1/iscale)
	}
	for i, v := range x {
		want := min(127, int(math.RoundToEven(float64(iscale*v))))
		if got := int(int8(dst[4+i])); got != want {
			t.Fatalf("q[%d] = %d, want %d (x=%g)", i, got, want, v)
		}
	}
	if q := int8(dst[4+4]); q != 2 {
		t.Errorf("0.25·10 rounded to %d, want 2", q)
	}
	for g := 0; g < 16; g++ {
		sum := 0
		for j := 0; j < 16; j++ {
			sum += int(int8(dst[4+16*g+j]))
		}
		if got := int(int16(binary.LittleEndian.Uint16(dst[260+2*g:]))); got != sum {
			t.Errorf("bsums[%d] = %d, want %d", g, got, sum)
		}
	}
	// A positive maximum flips the sign of every quant.
	y := make([]float32, 256)
	y[0] = 1
	y[1] = -0.5
	if err := QuantizeQ8K(y, dst); err != nil {
		t.Fatal(err)
	}
	if q0, q1 := int8(dst[4]), int8(dst[5]); q0 != -127 || q1 != 64 {
		t.Errorf("q = %d, %d; want -127, 64 (−63.5 rounds to −64, negated)", q0, q1)
	}
	// All zeros: d = 0 and no NaN.
	if err := QuantizeQ8K(make([]float32, 256), dst); err != nil {
		t.Fatal(err)
	}
	for i, b := range dst {
		if b != 0 {
			t.Fatalf("zero block byte %d = %#x", i, b)
		}
	}
}

func TestDotSizeErrors(t *testing.T) {
	k := Generic()
	for _, typ := range dotTypes {
		be := max(typ.BlockElems(), VecDotType(typ).BlockElems())
		rb, _ := RowBytes(typ, int64(be))
		ab, _ := RowBytes(VecDotType(typ), int64(be))
		if err := k.CheckDot(typ, be, int(rb), int(ab)); err != nil {
			t.Errorf("%s: valid sizes refused: %v", typ, err)
		}
		var se *SizeError
		if err := k.CheckDot(typ, be, int(rb)+1, int(ab)); !errors.As(err, &se) {
			t.Errorf("%s: long row: %v", typ, err)
		}
		if err := k.CheckDot(typ, be, int(rb), int(ab)-1); !errors.As(err, &se) {
			t.Errorf("%s: short activations: %v", typ, err)
		}
		if err := k.QuantizeAct(typ, make([]float32, be), make([]byte, ab+1)); !errors.As(err, &se) {
			t.Errorf("%s: QuantizeAct with long dst: %v", typ, err)
		}
		func() {
			defer func() {
				if !errors.As(recover().(error), &se) {
					t.Errorf("%s: VecDot on a short row did not panic with *SizeError", typ)
				}
			}()
			k.VecDot(typ, make([]byte, rb-1), make([]byte, ab), be)
		}()
	}
	if err := k.CheckDot(IQ2_XS, 256, 74, 292); !errors.Is(err, ErrUnsupported) {
		t.Errorf("IQ2_XS: %v", err)
	}
	if err := k.QuantizeAct(Type(77), nil, nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("type 77: %v", err)
	}
	for _, f := range []func([]float32, []byte) error{QuantizeQ8_0Act, QuantizeQ8_1Act, QuantizeQ8K} {
		var se *SizeError
		if err := f(make([]float32, 31), make([]byte, 36)); !errors.As(err, &se) {
			t.Errorf("activation quantizer accepted a partial block: %v", err)
		}
	}
}

func TestKernelsSelection(t *testing.T) {
	all := Features{AVX2: true, FMA: true, F16C: true, AVX512F: true, AVX512BW: true, AVX512VNNI: true, NEON: true, ARMDotProd: true}
	for _, f := range []Features{{}, all} {
		if got := Select(f, true).Name(); got != "generic" {
			t.Errorf("Select(%+v, forceGeneric) = %s, want generic", f, got)
		}
	}
	if Best().Name() == "" || Generic().Name() != "generic" || (Kernels{}).Name() != "generic" {
		t.Errorf("names: best %q generic %q zero %q", Best().Name(), Generic().Name(), (Kernels{}).Name())
	}
	// The zero Kernels computes with the generic table.
	row, _ := Quantize(Q8_0, make([]float32, 32))
	var z Kernels
	if got := z.DotF32(Q8_0, row, make([]float32, 32)); got != 0 {
		t.Errorf("zero Kernels DotF32 = %g", got)
	}
}
