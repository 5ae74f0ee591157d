package tensor

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// Blocks are built here from the GGUF format description, independently of
// the package's dequantizers, and the expected floats are computed from the
// definition of each type.

func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }

func buildQ4_0(d uint16, q []uint8) []byte {
	b := le16(d)
	for j := 0; j < 16; j++ {
		b = append(b, q[j]|q[j+16]<<4)
	}
	return b
}

func buildQ4_1(d, m uint16, q []uint8) []byte {
	b := append(le16(d), le16(m)...)
	for j := 0; j < 16; j++ {
		b = append(b, q[j]|q[j+16]<<4)
	}
	return b
}

func highBits32(q []uint8) uint32 {
	var qh uint32
	for j, v := range q {
		qh |= uint32(v>>4&1) << j
	}
	return qh
}

func buildQ5_0(d uint16, q []uint8) []byte {
	b := binary.LittleEndian.AppendUint32(le16(d), highBits32(q))
	for j := 0; j < 16; j++ {
		b = append(b, q[j]&15|(q[j+16]&15)<<4)
	}
	return b
}

func buildQ5_1(d, m uint16, q []uint8) []byte {
	b := binary.LittleEndian.AppendUint32(append(le16(d), le16(m)...), highBits32(q))
	for j := 0; j < 16; j++ {
		b = append(b, q[j]&15|(q[j+16]&15)<<4)
	}
	return b
}

func buildQ8_0(d uint16, q []int8) []byte {
	b := le16(d)
	for _, v := range q {
		b = append(b, byte(v))
	}
	return b
}

// kScales packs eight 6-bit scales and mins: bytes 0-3 hold sc[0..3] and
// the top two bits of sc[4..7]; bytes 4-7 hold m[0..3] and the top bits of
// m[4..7]; bytes 8-11 hold the low nibbles of sc[4..7] and m[4..7].
func kScales(sc, m []uint8) []byte {
	b := make([]byte, 12)
	for j := 0; j < 4; j++ {
		b[j] = sc[j] | (sc[j+4]>>4)<<6
		b[j+4] = m[j] | (m[j+4]>>4)<<6
		b[j+8] = sc[j+4]&15 | (m[j+4]&15)<<4
	}
	return b
}

func buildQ4_K(d, dmin uint16, sc, m, q []uint8) []byte {
	b := append(append(le16(d), le16(dmin)...), kScales(sc, m)...)
	for g := 0; g < 4; g++ {
		for l := 0; l < 32; l++ {
			b = append(b, q[64*g+l]|q[64*g+32+l]<<4)
		}
	}
	return b
}

func buildQ5_K(d, dmin uint16, sc, m, q []uint8) []byte {
	b := append(append(le16(d), le16(dmin)...), kScales(sc, m)...)
	qh := make([]byte, 32)
	for g := 0; g < 4; g++ {
		for l := 0; l < 32; l++ {
			qh[l] |= (q[64*g+l]>>4&1)<<(2*g) | (q[64*g+32+l]>>4&1)<<(2*g+1)
		}
	}
	b = append(b, qh...)
	for g := 0; g < 4; g++ {
		for l := 0; l < 32; l++ {
			b = append(b, q[64*g+l]&15|(q[64*g+32+l]&15)<<4)
		}
	}
	return b
}

func buildQ6_K(d uint16, sc []int8, q []uint8) []byte {
	ql := make([]byte, 128)
	qh := make([]byte, 64)
	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l++ {
			a, b2, c, e := q[128*h+l], q[128*h+l+32], q[128*h+l+64], q[128*h+l+96]
			ql[64*h+l] = a&15 | (c&15)<<4
			ql[64*h+l+32] = b2&15 | (e&15)<<4
			qh[32*h+l] = a>>4 | (b2>>4)<<2 | (c>>4)<<4 | (e>>4)<<6
		}
	}
	b := append(ql, qh...)
	for _, s := range sc {
		b = append(b, byte(s))
	}
	return append(b, le16(d)...)
}

func randQ(r *rand.Rand, n, levels int) []uint8 {
	q := make([]uint8, n)
	for i := range q {
		q[i] = uint8(r.IntN(levels))
	}
	return q
}

func TestDequantizeHandBuiltBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	type tc struct {
		typ  Type
		src  []byte
		want []float32
	}
	var cases []tc
	half := F16ToF32
	for rep := 0; rep < 4; rep++ {
		d := F32ToF16(float32(r.IntN(200)-100) / 64)
		m := F32ToF16(float32(r.IntN(200)-100) / 32)
		q16 := randQ(r, 32, 16)
		q32 := randQ(r, 32, 32)
		var w40, w41, w50, w51, w80 []float32
		q8 := make([]int8, 32)
		for i := 0; i < 32; i++ {
			q8[i] = int8(r.IntN(256) - 128)
			w40 = append(w40, float32(int(q16[i])-8)*half(d))
			w41 = append(w41, float32(float32(q16[i])*half(d))+half(m)) // conversions stop FMA fusion
			w50 = append(w50, float32(int(q32[i])-16)*half(d))
			w51 = append(w51, float32(float32(q32[i])*half(d))+half(m))
			w80 = append(w80, float32(q8[i])*half(d))
		}
		cases = append(cases,
			tc{Q4_0, buildQ4_0(d, q16), w40},
			tc{Q4_1, buildQ4_1(d, m, q16), w41},
			tc{Q5_0, buildQ5_0(d, q32), w50},
			tc{Q5_1, buildQ5_1(d, m, q32), w51},
			tc{Q8_0, buildQ8_0(d, q8), w80},
		)

		sc, mn := randQ(r, 8, 64), randQ(r, 8, 64)
		dmin := F32ToF16(float32(r.IntN(100)) / 256)
		k4, k5 := randQ(r, 256, 16), randQ(r, 256, 32)
		var w4k, w5k []float32
		for i := 0; i < 256; i++ {
			s, mm := float32(sc[i/32]), float32(mn[i/32])
			w4k = append(w4k, float32(half(d)*s*float32(k4[i]))-float32(half(dmin)*mm))
			w5k = append(w5k, float32(half(d)*s*float32(k5[i]))-float32(half(dmin)*mm))
		}
		cases = append(cases,
			tc{Q4_K, buildQ4_K(d, dmin, sc, mn, k4), w4k},
			tc{Q5_K, buildQ5_K(d, dmin, sc, mn, k5), w5k},
		)

		sc6 := make([]int8, 16)
		for i := range sc6 {
			sc6[i] = int8(r.IntN(256) - 128)
		}
		k6 := randQ(r, 256, 64)
		var w6k []float32
		for i := 0; i < 256; i++ {
			w6k = append(w6k, half(d)*float32(sc6[i/16])*float32(int(k6[i])-32))
		}
		cases = append(cases, tc{Q6_K, buildQ6_K(d, sc6, k6), w6k})

		q8k := make([]byte, 292)
		d8k := float32(r.IntN(1000)+1) / 4096
		binary.LittleEndian.PutUint32(q8k, math.Float32bits(d8k))
		var w8k []float32
		for i := 0; i < 256; i++ {
			v := int8(r.IntN(255) - 127)
			q8k[4+i] = byte(v)
			w8k = append(w8k, d8k*float32(v))
		}
		cases = append(cases, tc{Q8_K, q8k, w8k})
	}
	for _, c := range cases {
		got := make([]float32, len(c.want))
		if err := Dequantize(c.typ, c.src, got); err != nil {
			t.Fatalf("%s: %v", c.typ, err)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%s element %d = %g, want %g", c.typ, i, got[i], c.want[i])
			}
		}
	}
}

// Golden blocks with values worked out by hand from the format.
func TestDequantizeGolden(t *testing.T) {
	// Q4_0, d = 0.5: byte 0 = 0x10 → element 0 has q=0 → (0−8)·0.5 = −4,
	// element 16 has q=1 → −3.5; byte 15 = 0xf8 → element 15 q=8 → 0,
	// element 31 q=15 → 3.5; other bytes 0x88 → 0.
	q40 := []byte{0x00, 0x38, 0x10, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0xf8}
	want := make([]float32, 32)
	want[0], want[16], want[31] = -4, -3.5, 3.5
	checkGolden(t, Q4_0, q40, want)

	// Q5_0, d = −1 (0xbc00), qh bit 0 set and bit 31 set: element 0 has
	// q = 16|0 → 0, element 31 has q = 16|15 = 31 → (31−16)·−1 = −15;
	// the rest have q = 0 → 16.
	q50 := append([]byte{0x00, 0xbc, 0x01, 0x00, 0x00, 0x80}, make([]byte, 16)...)
	q50[6+15] = 0xf0
	want = make([]float32, 32)
	for i := range want {
		want[i] = 16
	}
	want[0], want[31] = 0, -15
	checkGolden(t, Q5_0, q50, want)

	// Q4_K, d = 1, dmin = 0.5; scale bytes give sub-blocks 0..3 scales
	// 1,2,3,4 and mins 5,6,7,8, sub-blocks 4..7 scale 1 min 2 (0x21 low and
	// high nibbles). Every qs byte is 0x53: low nibble 3, high nibble 5.
	// Element 0 (sub 0, low): 1·3 − 0.5·5 = 0.5. Element 32 (sub 1, high):
	// 2·5 − 0.5·6 = 7. Element 128 (sub 4): 1·3 − 0.5·2 = 2. Element 255
	// (sub 7, high): 1·5 − 1 = 4.
	q4k := []byte{0x00, 0x3c, 0x00, 0x38, 1, 2, 3, 4, 5, 6, 7, 8, 0x21, 0x21, 0x21, 0x21}
	for i := 0; i < 128; i++ {
		q4k = append(q4k, 0x53)
	}
	got := make([]float32, 256)
	if err := Dequantize(Q4_K, q4k, got); err != nil {
		t.Fatal(err)
	}
	for i, w := range map[int]float32{0: 0.5, 32: 7, 64: 3*3 - 3.5, 128: 2, 255: 4} {
		if got[i] != w {
			t.Errorf("Q4_K element %d = %g, want %g", i, got[i], w)
		}
	}
}

func checkGolden(t *testing.T, typ Type, src []byte, want []float32) {
	t.Helper()
	got := make([]float32, len(want))
	if err := Dequantize(typ, src, got); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s element %d = %g, want %g", typ, i, got[i], want[i])
		}
	}
}

func TestDequantizePlainTypes(t *testing.T) {
	vals := []float32{0, 1, -2.5, 65504, float32(math.Inf(1)), 1e-7}
	for _, typ := range []Type{F32, F16, BF16} {
		src, err := Quantize(typ, vals)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, len(vals))
		if err := Dequantize(typ, src, got); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			var want float32
			switch typ {
			case F32:
				want = v
			case F16:
				want = F16ToF32(F32ToF16(v))
			case BF16:
				want = BF16ToF32(F32ToBF16(v))
			}
			if got[i] != want {
				t.Errorf("%s element %d = %g, want %g", typ, i, got[i], want)
			}
		}
	}
	// NaN survives F32/F16/BF16.
	for _, typ := range []Type{F32, F16, BF16} {
		src, _ := Quantize(typ, []float32{float32(math.NaN())})
		got := make([]float32, 1)
		if err := Dequantize(typ, src, got); err != nil || !math.IsNaN(float64(got[0])) {
			t.Errorf("%s NaN: got %g, %v", typ, got[0], err)
		}
	}
}

var allTypes = []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q8_K, Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4}

func TestDequantizeSizes(t *testing.T) {
	for _, typ := range allTypes {
		be, bb := typ.BlockElems(), typ.BlockBytes()
		for nb := 0; nb <= 5; nb++ {
			src := make([]byte, nb*bb)
			dst := make([]float32, nb*be)
			if err := Dequantize(typ, src, dst); err != nil {
				t.Errorf("%s, %d blocks: %v", typ, nb, err)
			}
			for i, v := range dst {
				if v != 0 {
					t.Fatalf("%s: zero block gave element %d = %g", typ, i, v)
				}
			}
		}
		var se *SizeError
		if err := Dequantize(typ, make([]byte, bb+1), make([]float32, be)); !errors.As(err, &se) || se.Want != bb {
			t.Errorf("%s with a byte too many: %v", typ, err)
		}
		if err := Dequantize(typ, make([]byte, bb-1), make([]float32, be)); !errors.As(err, &se) {
			t.Errorf("%s with a byte too few: %v", typ, err)
		}
		if be > 1 {
			if err := Dequantize(typ, make([]byte, bb), make([]float32, be+1)); !errors.As(err, &se) || se.Want != -1 {
				t.Errorf("%s with a partial block: %v", typ, err)
			}
		}
	}
	for _, typ := range []Type{IQ2_XS, IQ3_S, Type(4), Type(1000)} {
		if err := Dequantize(typ, nil, nil); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: got %v, want ErrUnsupported", typ, err)
		}
	}
}

// TestDotF16F32Generic checks the generic F16 DotF32 against the
// dequantize-then-sum path it replaces, bit for bit.
func TestDotF16F32Generic(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	via := dotViaDequant(F16, dequantF16)
	for _, n := range []int{0, 1, 7, 255, 256, 257, 1000} {
		row, _ := Quantize(F16, gaussian(r, n, 1))
		x := gaussian(r, n, 1)
		if got, want := dotF16F32(row, x), via(row, x); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("n=%d: %v, via dequantization %v", n, got, want)
		}
	}
}
