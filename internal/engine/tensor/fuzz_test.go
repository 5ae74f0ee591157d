package tensor

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// FuzzDequantize feeds arbitrary bytes as blocks of every type: whole
// blocks must decode without error or panic, and any other length must be
// refused with a *SizeError.
func FuzzDequantize(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0, 0x80, 0x3f})
	f.Add(uint8(4), make([]byte, 18))
	f.Add(uint8(8), make([]byte, 144))
	f.Add(uint8(10), []byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3})
	f.Add(uint8(11), make([]byte, 292*2))
	// The 2–4-bit types: Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4.
	for sel, bb := range map[uint8]int{12: 84, 13: 110, 14: 18, 15: 136, 16: 17} {
		blk := make([]byte, 2*bb+1)
		for i := range blk {
			blk[i] = byte(i*37 + 11)
		}
		f.Add(sel, blk)
	}
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		typ := allTypes[int(sel)%len(allTypes)]
		be, bb := typ.BlockElems(), typ.BlockBytes()
		blocks := len(data) / bb
		dst := make([]float32, blocks*be)
		if err := Dequantize(typ, data[:blocks*bb], dst); err != nil {
			t.Fatalf("%s, %d whole blocks: %v", typ, blocks, err)
		}
		if len(data)%bb != 0 {
			var se *SizeError
			if err := Dequantize(typ, data, dst); !errors.As(err, &se) {
				t.Fatalf("%s with %d bytes for %d elements: %v", typ, len(data), len(dst), err)
			}
		}
	})
}

// FuzzQuantize checks that every quantizer accepts any finite input, that
// dequantizing gives finite values within the block's range (plus the
// format's slack), and that non-finite input is refused.
func FuzzQuantize(f *testing.F) {
	f.Add(uint8(3), []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0})
	f.Add(uint8(8), make([]byte, 64))
	for sel := uint8(12); sel <= 16; sel++ {
		x := make([]byte, 4*2*QK_K)
		for i := 0; i < len(x); i += 4 {
			binary.LittleEndian.PutUint32(x[i:], math.Float32bits(float32(math.Sin(float64(i)))*float32(i%7)))
		}
		f.Add(sel, x)
	}
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		typ := allTypes[int(sel)%len(allTypes)]
		be := typ.BlockElems()
		n := len(data) / 4 / be * be
		x := make([]float32, n)
		finite := true
		var amax float64
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			v := float64(x[i])
			if !(math.Abs(v) <= MaxBlockValue) {
				finite = false // out of the block types' domain
			}
			amax = max(amax, math.Abs(v))
		}
		q, err := Quantize(typ, x)
		if be > 1 && !finite {
			var nf *ValueError
			if !errors.As(err, &nf) {
				t.Fatalf("%s accepted a value outside ±%d: %v", typ, MaxBlockValue, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		y := make([]float32, n)
		if err := Dequantize(typ, q, y); err != nil {
			t.Fatal(err)
		}
		if be == 1 {
			return
		}
		for i, v := range y {
			if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 2.5*amax+1e-4 {
				t.Fatalf("%s element %d: %g from input of magnitude ≤ %g", typ, i, v, amax)
			}
		}
	})
}

// FuzzHalf checks the half conversions against their defining properties.
func FuzzHalf(f *testing.F) {
	f.Add(uint32(0x3f800000))
	f.Add(uint32(0x477ff000))
	f.Add(uint32(0x7f800001))
	f.Fuzz(func(t *testing.T, bits uint32) {
		x := math.Float32frombits(bits)
		h := F32ToF16(x)
		if math.IsNaN(float64(x)) {
			if h&0x7fff != 0x7e00 {
				t.Fatalf("NaN %#08x -> %#04x", bits, h)
			}
			return
		}
		if want := f16Nearest(x); h != want {
			t.Fatalf("F32ToF16(%#08x) = %#04x, want %#04x", bits, h, want)
		}
		b := F32ToBF16(x)
		back := BF16ToF32(b)
		if math.IsInf(float64(back), 0) {
			return
		}
		if d := math.Abs(float64(back) - float64(x)); d > math.Abs(float64(x))/256 {
			t.Fatalf("BF16 round trip of %g gave %g", x, back)
		}
	})
}
