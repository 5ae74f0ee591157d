package tensor

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// kernelPath is one dispatch path Select can return, with the features that
// reach it.
type kernelPath struct {
	name string
	f    Features
}

var kernelPaths = []kernelPath{
	{"avx2", Features{AVX2: true, FMA: true, F16C: true}},
	{"avx512", Features{AVX2: true, FMA: true, F16C: true, AVX512F: true, AVX512BW: true, AVX512VL: true, AVX512VNNI: true}},
	{"neon", Features{NEON: true}},
	{"neon-dotprod", Features{NEON: true, ARMDotProd: true}},
}

// simdPaths runs fn for every SIMD path this build and CPU can execute and
// skips, saying why, the ones they cannot.
func simdPaths(t *testing.T, fn func(t *testing.T, k Kernels)) {
	have := cpuFeatures()
	for _, p := range kernelPaths {
		t.Run(p.name, func(t *testing.T) {
			if !haveArchKernels {
				t.Skipf("%s: this build (GOARCH or the purego tag) has no assembly kernels", p.name)
			}
			if missing := missingFeatures(have, p.f); missing != "" {
				t.Skipf("%s: this CPU lacks %s", p.name, missing)
			}
			k := Select(p.f, false)
			if k.Name() != p.name {
				t.Fatalf("Select(%+v) = %s, want %s", p.f, k.Name(), p.name)
			}
			fn(t, k)
		})
	}
}

func missingFeatures(have, want Features) string {
	var m string
	for _, c := range []struct {
		name       string
		have, want bool
	}{
		{"AVX2", have.AVX2, want.AVX2}, {"FMA", have.FMA, want.FMA}, {"F16C", have.F16C, want.F16C},
		{"AVX512F", have.AVX512F, want.AVX512F}, {"AVX512BW", have.AVX512BW, want.AVX512BW},
		{"AVX512VL", have.AVX512VL, want.AVX512VL}, {"AVX512VNNI", have.AVX512VNNI, want.AVX512VNNI},
		{"NEON", have.NEON, want.NEON}, {"ARMDotProd", have.ARMDotProd, want.ARMDotProd},
	} {
		if c.want && !c.have {
			m += " " + c.name
		}
	}
	return m
}

// simdTypes are the weight types with a SIMD vec-dot kernel.
var simdTypes = []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4}

// pow2F16 is the fp16 bits of 2^e for small e.
func pow2F16(e int) uint16 { return F32ToF16(float32(math.Ldexp(1, e))) }

// exactOperands builds a row and activations of n elements whose float
// scales are powers of two and whose integer products stay small enough that
// every partial sum, in any order, is exact in float32: any difference
// between kernels is then an integer error. ymax bounds the activation
// quants; the K-quant callers keep blocks·(worst block sum) below 2^24.
func exactOperands(r *rand.Rand, typ Type, n, ymax int) (row, act []byte) {
	rb, _ := RowBytes(typ, int64(n))
	ab, _ := RowBytes(VecDotType(typ), int64(n))
	row, act = make([]byte, rb), make([]byte, ab)
	randBytes := func(b []byte) {
		for i := range b {
			b[i] = byte(r.Uint32())
		}
	}
	yq := func() byte { return byte(int8(r.IntN(2*ymax+1) - ymax)) }
	switch typ {
	case F32, F16, BF16:
		put := func(b []byte, i int, v float32) {
			switch typ {
			case F32:
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
			case F16:
				binary.LittleEndian.PutUint16(b[2*i:], F32ToF16(v))
			default:
				binary.LittleEndian.PutUint16(b[2*i:], F32ToBF16(v))
			}
		}
		for i := 0; i < n; i++ {
			put(row, i, float32(r.IntN(129)-64)/8)
			put(act, i, float32(r.IntN(129)-64)/4)
		}
		return row, act
	}
	randBytes(row)
	e, ey := r.IntN(7)-3, r.IntN(7)-3
	switch VecDotType(typ) {
	case Q8_0:
		for b := 0; b < n/32; b++ {
			if typ == MXFP4 {
				row[b*17] = byte(127 + e) // half of it is 2^(e−1)
			} else {
				binary.LittleEndian.PutUint16(row[b*typ.BlockBytes():], pow2F16(e))
			}
			blk := act[b*34:]
			binary.LittleEndian.PutUint16(blk, pow2F16(ey))
			for j := 0; j < 32; j++ {
				blk[2+j] = yq()
			}
		}
	case Q8_K:
		for b := 0; b < n/QK_K; b++ {
			blk := row[b*typ.BlockBytes():]
			switch typ {
			case Q6_K:
				binary.LittleEndian.PutUint16(blk[208:], pow2F16(e))
			case Q3_K:
				binary.LittleEndian.PutUint16(blk[108:], pow2F16(e))
			case IQ4_XS:
				binary.LittleEndian.PutUint16(blk, pow2F16(e))
			case Q2_K:
				binary.LittleEndian.PutUint16(blk[80:], pow2F16(e))
				binary.LittleEndian.PutUint16(blk[82:], pow2F16(e-r.IntN(3)))
			default:
				binary.LittleEndian.PutUint16(blk, pow2F16(e))
				binary.LittleEndian.PutUint16(blk[2:], pow2F16(e-r.IntN(3)))
			}
			y := act[b*292:]
			binary.LittleEndian.PutUint32(y, math.Float32bits(float32(math.Ldexp(1, ey))))
			for j := 0; j < QK_K; j++ {
				y[4+j] = yq()
			}
			setBsums(y)
		}
	}
	return row, act
}

// setBsums fills in a Q8_K block's 16-element quant sums.
func setBsums(y []byte) {
	for g := 0; g < 16; g++ {
		s := 0
		for _, q := range y[4+16*g : 4+16*g+16] {
			s += int(int8(q))
		}
		binary.LittleEndian.PutUint16(y[260+2*g:], uint16(int16(s)))
	}
}

// exactLimits gives, per type, the activation bound and the most blocks for
// which exactOperands stays exact in the worst case (2^24 / worst block sum).
func exactLimits(typ Type) (ymax, maxBlocks int) {
	switch typ {
	case Q8_0: // 32·128·127 per block
		return 127, 40
	case Q4_0: // 32·8·127
		return 127, 100
	case Q4_K: // 256·63·15·7
		return 7, 9
	case Q5_K: // 256·63·31·7
		return 7, 4
	case Q6_K: // 256·128·32·3
		return 3, 5
	case Q2_K: // 256·15·3·7 plus 16·16·7·15
		return 7, 20
	case Q3_K: // 256·32·4·7
		return 7, 9
	case IQ4_NL: // 32·127·127
		return 127, 30
	case IQ4_XS: // 256·32·127·3
		return 3, 5
	case MXFP4: // 32·12·127
		return 127, 100
	}
	return 0, 0
}

// TestSIMDVecDotExact checks every SIMD kernel against the generic one on
// operands where float rounding cannot occur, so the results must be equal
// bit for bit: every block count up to the exactness limit for block types,
// every length 0..100 and a few long ones for the float types.
func TestSIMDVecDotExact(t *testing.T) {
	simdPaths(t, func(t *testing.T, k Kernels) {
		g := Generic()
		r := rand.New(rand.NewPCG(21, 22))
		for _, typ := range simdTypes {
			var lengths []int
			if be := typ.BlockElems(); be == 1 {
				for n := 0; n <= 100; n++ {
					lengths = append(lengths, n)
				}
				lengths = append(lengths, 255, 256, 257, 1000, 4096+7)
			} else {
				ymax, maxBlocks := exactLimits(typ)
				_ = ymax
				be = max(be, VecDotType(typ).BlockElems())
				for nb := 1; nb <= maxBlocks; nb++ {
					lengths = append(lengths, nb*be)
				}
			}
			ymax, _ := exactLimits(typ)
			for _, n := range lengths {
				for trial := 0; trial < 3; trial++ {
					row, act := exactOperands(r, typ, n, ymax)
					want := g.VecDot(typ, row, act, n)
					if got := k.VecDot(typ, row, act, n); math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("%s n=%d trial %d: %s = %g, generic = %g", typ, n, trial, k.Name(), got, want)
					}
				}
			}
		}
	})
}

// TestSIMDVecDotExtremes drives the integer paths to their limits in one
// block (largest quants against ±127 activations, the most negative int8
// weights and scales) where a saturating or overflowing step would be off by
// far more than the tolerance.
func TestSIMDVecDotExtremes(t *testing.T) {
	simdPaths(t, func(t *testing.T, k Kernels) {
		g := Generic()
		r := rand.New(rand.NewPCG(23, 24))
		for _, typ := range []Type{Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4} {
			n := max(typ.BlockElems(), VecDotType(typ).BlockElems())
			for _, wfill := range []byte{0x00, 0xff, 0x80, 0x7f, 0x88} {
				for _, y := range []int8{127, -127} {
					row, act := exactOperands(r, typ, n, 1)
					for i := range row {
						row[i] = wfill
					}
					// Keep the float scales sane: fill only the quant bytes.
					row2, _ := exactOperands(r, typ, n, 1)
					restoreScales(typ, row, row2)
					for b := 0; b < len(act)/VecDotType(typ).BlockBytes(); b++ {
						fillActQuants(VecDotType(typ), act[b*VecDotType(typ).BlockBytes():], y, b%2 == 1)
					}
					want := g.VecDot(typ, row, act, n)
					got := k.VecDot(typ, row, act, n)
					if d := math.Abs(float64(got - want)); d > 1e-6*math.Abs(float64(want)) {
						t.Errorf("%s weights %#02x act %d: %s = %g, generic = %g", typ, wfill, y, k.Name(), got, want)
					}
				}
			}
		}
	})
}

// restoreScales copies the float scale fields of each block of src into dst.
func restoreScales(typ Type, dst, src []byte) {
	bb := typ.BlockBytes()
	for b := 0; b < len(dst)/bb; b++ {
		switch typ {
		case Q6_K:
			copy(dst[b*bb+208:b*bb+210], src[b*bb+208:])
		case Q4_K, Q5_K:
			copy(dst[b*bb:b*bb+4], src[b*bb:])
		case Q2_K:
			copy(dst[b*bb+80:b*bb+84], src[b*bb+80:])
		case Q3_K:
			copy(dst[b*bb+108:b*bb+110], src[b*bb+108:])
		case MXFP4:
			dst[b*bb] = src[b*bb]
		default:
			copy(dst[b*bb:b*bb+2], src[b*bb:])
		}
	}
}

// fillActQuants sets every quant of an activation block to y (alternating
// sign if alt) and fixes up the Q8_K sums.
func fillActQuants(at Type, blk []byte, y int8, alt bool) {
	off, n := 2, 32
	if at == Q8_K {
		off, n = 4, QK_K
	}
	for j := 0; j < n; j++ {
		v := y
		if alt && j%2 == 1 {
			v = -y
		}
		blk[off+j] = byte(v)
	}
	if at == Q8_K {
		setBsums(blk)
	}
}

// TestSIMDVecDotRandom compares SIMD and generic kernels on realistic
// operands (Gaussian weights quantized by Quantize, activations by
// QuantizeAct) over many block counts. Float rounding differs, so the bound
// is relative to Σ|w·a| of the dequantized operands, times the number of
// accumulation steps.
func TestSIMDVecDotRandom(t *testing.T) {
	simdPaths(t, func(t *testing.T, k Kernels) {
		g := Generic()
		r := rand.New(rand.NewPCG(25, 26))
		for _, typ := range simdTypes {
			be := max(typ.BlockElems(), VecDotType(typ).BlockElems())
			if be == 1 {
				be = 37 // any length: exercise the tails
			}
			for _, nb := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 33, 64} {
				n := nb * be
				w, x := gaussian(r, n, 0.05), gaussian(r, n, 1)
				row, err := Quantize(typ, w)
				if err != nil {
					t.Fatal(err)
				}
				ab, _ := RowBytes(VecDotType(typ), int64(n))
				act := make([]byte, ab)
				if err := g.QuantizeAct(typ, x, act); err != nil {
					t.Fatal(err)
				}
				wd, xd := make([]float32, n), make([]float32, n)
				_ = g.Dequantize(typ, row, wd)
				_ = g.Dequantize(VecDotType(typ), act, xd)
				_, mag := exactDot(wd, xd)
				if typ == Q4_K || typ == Q5_K || typ == Q2_K {
					mag *= 4 // the scale and min terms are each larger than their difference
				}
				tol := float64(nb+16) * 0x1p-23 * mag
				want := g.VecDot(typ, row, act, n)
				got := k.VecDot(typ, row, act, n)
				if d := math.Abs(float64(got - want)); d > tol {
					t.Errorf("%s n=%d: %s = %g, generic = %g, |Δ| = %g > %g", typ, n, k.Name(), got, want, d, tol)
				}
			}
		}
	})
}

// TestSIMDDotF32 checks the F32 DotF32 entry, which shares the vec-dot
// kernel through a reinterpreted slice, and the F16 one, on operands whose
// sums are exact.
func TestSIMDDotF32(t *testing.T) {
	simdPaths(t, func(t *testing.T, k Kernels) {
		r := rand.New(rand.NewPCG(27, 28))
		for _, typ := range []Type{F32, F16} {
			for n := 0; n <= 70; n++ {
				row, act := exactOperands(r, typ, n, 0)
				x := make([]float32, n)
				_ = Generic().Dequantize(typ, act, x)
				if got, want := k.DotF32(typ, row, x), Generic().DotF32(typ, row, x); got != want {
					t.Fatalf("%s n=%d: %s DotF32 = %g, generic = %g", typ, n, k.Name(), got, want)
				}
			}
		}
	})
}

func TestCapFeatures(t *testing.T) {
	all := Features{AVX2: true, FMA: true, F16C: true, AVX512F: true, AVX512BW: true, AVX512VL: true, AVX512VNNI: true, NEON: true, ARMDotProd: true}
	noAVX512 := all
	noAVX512.AVX512F, noAVX512.AVX512BW, noAVX512.AVX512VL, noAVX512.AVX512VNNI = false, false, false, false
	noSDOT := all
	noSDOT.ARMDotProd = false
	tests := []struct {
		cap       string
		want      Features
		wantForce bool
		wantOK    bool
	}{
		{cap: CapNone, want: all, wantOK: true},
		{cap: CapGeneric, want: Features{}, wantForce: true, wantOK: true},
		{cap: CapAVX2, want: noAVX512, wantOK: true},
		{cap: CapNEON, want: noSDOT, wantOK: true},
		{cap: "avx512", want: all},
		{cap: "Generic", want: all},
	}
	for _, tt := range tests {
		f, force, ok := capFeatures(all, tt.cap)
		if f != tt.want || force != tt.wantForce || ok != tt.wantOK {
			t.Errorf("cap %q: %+v force %v ok %v; want %+v, %v, %v", tt.cap, f, force, ok, tt.want, tt.wantForce, tt.wantOK)
		}
		k, err := Capped(tt.cap)
		if tt.wantOK != (err == nil) || !tt.wantOK && !errors.Is(err, ErrUnknownCap) {
			t.Errorf("Capped(%q): %v", tt.cap, err)
		}
		if tt.cap == CapGeneric && k.Name() != "generic" {
			t.Errorf("Capped(generic) chose %s", k.Name())
		}
	}
	if haveArchKernels {
		if got := Select(Features{AVX2: true, FMA: true}, false).Name(); got != "generic" {
			t.Errorf("without F16C Select chose %s", got)
		}
	}
}

// TestVecDotRows checks the multi-row entry against VecDot row by row (the
// same kernel, so bit for bit), with padded strides, and its size checks.
func TestVecDotRows(t *testing.T) {
	tileKernels(t, func(t *testing.T, k Kernels) {
		r := rand.New(rand.NewPCG(29, 30))
		for _, typ := range dotTypes {
			n := 2 * max(typ.BlockElems(), VecDotType(typ).BlockElems(), 32)
			rb, _ := RowBytes(typ, int64(n))
			for _, pad := range []int{0, 3} {
				stride := int(rb) + pad
				nrows := 5 + pad
				rows := make([]byte, (nrows-1)*stride+int(rb))
				for i := 0; i < nrows; i++ {
					row, _ := Quantize(typ, gaussian(r, n, 0.05))
					copy(rows[i*stride:], row)
				}
				ab, _ := RowBytes(VecDotType(typ), int64(n))
				act := make([]byte, ab)
				_ = k.QuantizeAct(typ, gaussian(r, n, 1), act)
				out := make([]float32, nrows)
				k.VecDotRows(typ, rows, stride, act, n, out)
				for i, got := range out {
					if want := k.VecDot(typ, rows[i*stride:i*stride+int(rb)], act, n); got != want {
						t.Errorf("%s %s pad %d row %d: VecDotRows %g, VecDot %g", k.Name(), typ, pad, i, got, want)
					}
				}
				for _, bad := range []struct {
					name   string
					rows   []byte
					stride int
				}{
					{"short rows", rows[:len(rows)-1], stride},
					{"stride below a row", rows, int(rb) - 1},
					{"rows shorter than one row", rows[:int(rb)-1], stride},
				} {
					func() {
						defer func() {
							var se *SizeError
							if err, _ := recover().(error); !errors.As(err, &se) {
								t.Errorf("%s %s: %s: recovered %v, want *SizeError", k.Name(), typ, bad.name, err)
							}
						}()
						k.VecDotRows(typ, bad.rows, bad.stride, act, n, out)
					}()
				}
			}
		}
	})
	// No rows is not an error, whatever the row buffer.
	Best().VecDotRows(Q8_0, nil, 0, make([]byte, 34), 32, nil)
}

// TestSIMDQuantizeAct checks that every SIMD activation quantizer writes
// the generic one's bytes exactly: Gaussian rows of many block counts, and
// blocks built to hit the rounding cases (all zeros, halves that round to
// even once scaled by 127/amax = 1, a lone nonzero, ties for the largest
// magnitude with either sign first).
func TestSIMDQuantizeAct(t *testing.T) {
	simdPaths(t, func(t *testing.T, k Kernels) {
		g := Generic()
		r := rand.New(rand.NewPCG(39, 40))
		special := make([]float32, 4*256)
		for i := range 32 {
			special[32+i] = float32(i) - 15.5 // ±0.5, ±1.5, … with amax 127 below
			special[96+i] = float32(r.NormFloat64() * 1e-30)
		}
		special[32+31] = 127
		special[64+17] = -3e-5
		special[128] = -127                           // ties 127 above: the first one sets the sign
		special[256+5], special[256+200] = -50, 50    // the same tie, negative first
		special[256+9], special[256+100] = 1.25, -3.5 // and smaller values around it
		for i := 129; i < 160; i++ {
			special[i] = float32(i-144) + 0.5
		}
		for _, typ := range simdTypes {
			at := VecDotType(typ)
			if at == F32 {
				continue
			}
			inputs := [][]float32{special, gaussian(r, 256, 1), gaussian(r, 33*256, 3)}
			if at == F16 {
				inputs = append(inputs, wideFloats(r, 1000+r.IntN(16)))
			}
			for _, x := range inputs {
				ab, _ := RowBytes(at, int64(len(x)))
				want, got := make([]byte, ab), make([]byte, ab)
				if err := g.QuantizeAct(typ, x, want); err != nil {
					t.Fatal(err)
				}
				if err := k.QuantizeAct(typ, x, got); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s activations (%s), %d values: byte %d is %#x, generic %#x", at, k.Name(), len(x), i, got[i], want[i])
					}
				}
			}
		}
	})
}

// wideFloats returns n floats spread over the whole float32 range, with
// the values where rounding to fp16 changes regime (its largest finite
// value and the overflow threshold, its smallest subnormal and half of it,
// infinities, zeros) among them. No NaN: the SIMD conversion keeps a NaN's
// payload, which F32ToF16 does not.
func wideFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		for {
			x[i] = math.Float32frombits(r.Uint32())
			if !math.IsNaN(float64(x[i])) {
				break
			}
		}
		if i%3 == 0 {
			x[i] = float32(math.Ldexp(r.Float64()+0.5, r.IntN(50)-30)) // mostly within fp16's range
		}
	}
	copy(x, []float32{65504, 65519.996, 65520, -65520, 0x1p-24, 0x1p-25, 0x1.8p-25, 0x1p-26, 0x1.002p-14,
		float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1 + 0x1p-11, 1 + 0x3p-11})
	return x
}

// TestDotF32Tile checks the attention-values entry: every result is the
// same bits whatever else shares its call (queries grouped any way, rows
// any way, one by one), garbage past a span (NaN, ±Inf) never reaches a
// result, the results agree with a float64 sum, and short buffers panic
// with *SizeError.
func TestDotF32Tile(t *testing.T) {
	tileKernels(t, func(t *testing.T, k Kernels) {
		r := rand.New(rand.NewPCG(41, 42))
		for _, c := range []struct {
			typ   Type
			nrows int
			lens  []int
		}{
			{F32, 8, []int{13, 14, 15}},
			{F16, 8, []int{1}},
			{F16, 64, []int{0, 1, 2, 3, 4, 5, 6, 7}},
			{F16, 64, []int{61, 62, 63, 64, 65, 66}},
			{F16, 13, []int{77, 3, 200, 8, 9, 16, 17}},
			{F16, 128, []int{300, 301, 302, 303, 304}},
			{F16, 6, []int{40, 41}},
			{BF16, 8, []int{9, 10, 11}},
			{Q8_0, 4, []int{32, 96, 64}},
		} {
			typ, nrows, lens := c.typ, c.nrows, c.lens
			long := slices.Max(lens)
			stride := rowLen(typ, long) + 6
			rows := make([]byte, (nrows-1)*stride+rowLen(typ, DotF32TilePad(long)))
			nan := []byte{0x00, 0x7e} // an fp16 NaN, a float32 one in pairs
			for i := range rows {
				rows[i] = nan[i%2]
			}
			for i := 0; i < nrows; i++ {
				row, _ := Quantize(typ, gaussian(r, long, 0.5))
				copy(rows[i*stride:], row)
			}
			xStride := DotF32TilePad(long) + 3
			x := make([]float32, (len(lens)-1)*xStride+DotF32TilePad(lens[len(lens)-1]))
			for i := range x {
				x[i] = float32([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}[i%3])
			}
			for i, n := range lens {
				copy(x[i*xStride:], gaussian(r, n, 1))
			}
			outStride := nrows + 2
			out := make([]float32, (len(lens)-1)*outStride+nrows)
			k.DotF32Tile(typ, rows, stride, nrows, x, xStride, lens, out, outStride)

			ref := make([]float32, long)
			for i, n := range lens {
				for row := 0; row < nrows; row++ {
					got := out[i*outStride+row]
					// Alone: one query, one row.
					var alone [1]float32
					k.DotF32Tile(typ, rows[row*stride:], stride, 1, x[i*xStride:], 0, []int{n}, alone[:], 0)
					if math.Float32bits(alone[0]) != math.Float32bits(got) {
						t.Fatalf("%s %s span %d row %d: %v in the tile, %v alone", k.Name(), typ, n, row, got, alone[0])
					}
					Dequantize(typ, rows[row*stride:row*stride+rowLen(typ, n)], ref[:n])
					var want, mag float64
					for p := 0; p < n; p++ {
						want += float64(ref[p]) * float64(x[i*xStride+p])
						mag += math.Abs(float64(ref[p]) * float64(x[i*xStride+p]))
					}
					if math.IsNaN(float64(got)) || math.Abs(float64(got)-want) > 1e-5*mag+1e-30 {
						t.Fatalf("%s %s span %d row %d: %v, float64 sum %v", k.Name(), typ, n, row, got, want)
					}
				}
			}
			// Queries in other groupings, rows in other ranges.
			for _, cut := range []int{1, 2, len(lens) - 1} {
				if cut <= 0 || cut >= len(lens) {
					continue
				}
				again := slices.Clone(out)
				clear(again)
				lo := min(nrows/2, 3)
				k.DotF32Tile(typ, rows, stride, lo, x, xStride, lens[:cut], again, outStride)
				k.DotF32Tile(typ, rows[lo*stride:], stride, nrows-lo, x, xStride, lens[:cut], again[lo:], outStride)
				k.DotF32Tile(typ, rows, stride, nrows, x[cut*xStride:], xStride, lens[cut:], again[cut*outStride:], outStride)
				for i := range out {
					if math.Float32bits(again[i]) != math.Float32bits(out[i]) {
						t.Fatalf("%s %s cut %d: out[%d] %v, %v in one call", k.Name(), typ, cut, i, again[i], out[i])
					}
				}
			}
			for _, short := range []struct {
				name string
				call func()
			}{
				{"rows", func() { k.DotF32Tile(typ, rows[:len(rows)-1], stride, nrows, x, xStride, lens, out, outStride) }},
				{"x", func() { k.DotF32Tile(typ, rows, stride, nrows, x[:len(x)-1], xStride, lens, out, outStride) }},
				{"out", func() { k.DotF32Tile(typ, rows, stride, nrows, x, xStride, lens, out[:len(out)-1], outStride) }},
				{"stride", func() { k.DotF32Tile(typ, rows, rowLen(typ, long)-1, nrows, x, xStride, lens, out, outStride) }},
			} {
				func() {
					defer func() {
						if err, _ := recover().(error); !errors.As(err, new(*SizeError)) {
							t.Errorf("%s %s: short %s: recovered %v, want *SizeError", k.Name(), typ, short.name, err)
						}
					}()
					short.call()
				}()
			}
		}
	})
}
