package tensor

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestF16ToF32(t *testing.T) {
	tests := []struct {
		h    uint16
		want float32
	}{
		{0x0000, 0},
		{0x3c00, 1},
		{0xc000, -2},
		{0x3555, 0.333251953125},
		{0x7bff, 65504},
		{0x0400, 1.0 / (1 << 14)},       // smallest normal
		{0x0001, 1.0 / (1 << 24)},       // smallest subnormal
		{0x03ff, 1023.0 / (1 << 24)},    // largest subnormal
		{0x8001, -1.0 / (1 << 24)},      // negative subnormal
		{0x7c00, float32(math.Inf(1))},  // +Inf
		{0xfc00, float32(math.Inf(-1))}, // -Inf
	}
	for _, tc := range tests {
		if got := F16ToF32(tc.h); got != tc.want {
			t.Errorf("F16ToF32(%#04x) = %g, want %g", tc.h, got, tc.want)
		}
	}
	if b := math.Float32bits(F16ToF32(0x8000)); b != 0x80000000 {
		t.Errorf("F16ToF32(-0) bits = %#x, want 0x80000000", b)
	}
	// NaNs keep sign and payload (shifted into the float32 mantissa).
	for _, h := range []uint16{0x7e00, 0x7c01, 0xfd55} {
		got := math.Float32bits(F16ToF32(h))
		want := uint32(h&0x8000)<<16 | 0x7f800000 | uint32(h&0x3ff)<<13
		if got != want {
			t.Errorf("F16ToF32(%#04x) bits = %#08x, want %#08x", h, got, want)
		}
	}
}

func TestF32ToF16(t *testing.T) {
	pow2 := func(e int) float32 { return float32(math.Ldexp(1, e)) }
	tests := []struct {
		name string
		f    float32
		want uint16
	}{
		{"one", 1, 0x3c00},
		{"minus two", -2, 0xc000},
		{"max half", 65504, 0x7bff},
		{"below overflow midpoint", 65519.996, 0x7bff},
		{"overflow midpoint ties to inf", 65520, 0x7c00},
		{"huge", 1e10, 0x7c00},
		{"-inf", float32(math.Inf(-1)), 0xfc00},
		{"tie to even down", 1 + pow2(-11), 0x3c00},
		{"tie to even up", 1 + 3*pow2(-11), 0x3c02},
		{"above tie", 1 + pow2(-11) + pow2(-20), 0x3c01},
		{"smallest normal", pow2(-14), 0x0400},
		{"smallest subnormal", pow2(-24), 0x0001},
		{"half smallest subnormal ties to zero", pow2(-25), 0x0000},
		{"just above half unit", pow2(-25) + pow2(-40), 0x0001},
		{"1.5 units ties to 2", 3 * pow2(-25), 0x0002},
		{"2.5 units ties to 2", 5 * pow2(-25), 0x0002},
		{"subnormal rounds up to normal", 1023.5 * pow2(-24), 0x0400},
		{"float32 subnormal", math.Float32frombits(1), 0x0000},
		{"negative tiny keeps sign", -pow2(-30), 0x8000},
		{"nan", float32(math.NaN()), 0x7e00},
		{"negative nan", math.Float32frombits(0xffc00001), 0xfe00},
		{"signalling nan", math.Float32frombits(0x7f800001), 0x7e00},
	}
	for _, tc := range tests {
		if got := F32ToF16(tc.f); got != tc.want {
			t.Errorf("%s: F32ToF16(%g) = %#04x, want %#04x", tc.name, tc.f, got, tc.want)
		}
	}
}

// f16Nearest is an independent reference: binary search over the ordered
// positive halves, ties to the even code.
func f16Nearest(f float32) uint16 {
	sign := uint16(0)
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	v := math.Abs(float64(f))
	value := func(h int) float64 {
		if h == 0x7c00 {
			return 65536 // Inf rounds like the next binade's first value
		}
		return float64(F16ToF32(uint16(h)))
	}
	// first h with value(h) > v
	hi := sort.Search(0x7c01, func(h int) bool { return value(h) > v })
	if hi > 0x7c00 {
		return sign | 0x7c00
	}
	lo := hi - 1
	dl, dh := v-value(lo), value(hi)-v
	switch {
	case dl < dh:
		return sign | uint16(lo)
	case dh < dl:
		return sign | uint16(hi)
	case lo&1 == 0:
		return sign | uint16(lo)
	default:
		return sign | uint16(hi)
	}
}

func TestF32ToF16MatchesNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(b uint32) {
		f := math.Float32frombits(b)
		if math.IsNaN(float64(f)) {
			return
		}
		if got, want := F32ToF16(f), f16Nearest(f); got != want {
			t.Fatalf("F32ToF16(%g, bits %#08x) = %#04x, want %#04x", f, b, got, want)
		}
	}
	for i := 0; i < 200000; i++ {
		check(r.Uint32())
	}
	// Dense sweep over the exponents halves can represent (and just around them).
	for b := uint32(0x32800000); b < 0x47900000; b += 0x1f3 {
		check(b)
		check(b | 0x80000000)
	}
	// Every half and every midpoint between neighbours.
	for h := 0; h < 0x7c00; h++ {
		lo, hi := float64(F16ToF32(uint16(h))), float64(F16ToF32(uint16(h+1)))
		if h+1 == 0x7c00 {
			hi = 65536
		}
		check(math.Float32bits(float32((lo + hi) / 2)))
	}
}

func TestF16RoundTripExhaustive(t *testing.T) {
	for h := 0; h <= 0xffff; h++ {
		f := F16ToF32(uint16(h))
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("F16ToF32(%#04x) = %g, want NaN", h, f)
			}
			continue
		}
		if back := F32ToF16(f); back != uint16(h) {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, back)
		}
	}
}

func TestBF16(t *testing.T) {
	tests := []struct {
		name string
		bits uint32
		want uint16
	}{
		{"one", 0x3f800000, 0x3f80},
		{"tie to even stays", 0x3f808000, 0x3f80},
		{"tie to even rounds up", 0x3f818000, 0x3f82},
		{"above tie", 0x3f808001, 0x3f81},
		{"below tie", 0x3f807fff, 0x3f80},
		{"max float overflows", 0x7f7fffff, 0x7f80},
		{"inf", 0x7f800000, 0x7f80},
		{"-inf", 0xff800000, 0xff80},
		{"subnormal kept", 0x00010000, 0x0001},
		{"subnormal tie", 0x00018000, 0x0002},
		{"negative zero", 0x80000000, 0x8000},
		{"nan made quiet", 0x7f800001, 0x7fc0},
		{"signalling nan payload kept", 0x7f810000, 0x7fc1},
		{"negative nan", 0xffc00001, 0xffc0},
	}
	for _, tc := range tests {
		if got := F32ToBF16(math.Float32frombits(tc.bits)); got != tc.want {
			t.Errorf("%s: F32ToBF16(%#08x) = %#04x, want %#04x", tc.name, tc.bits, got, tc.want)
		}
	}
	for h := 0; h <= 0xffff; h++ {
		if got := math.Float32bits(BF16ToF32(uint16(h))); got != uint32(h)<<16 {
			t.Fatalf("BF16ToF32(%#04x) bits = %#08x", h, got)
		}
		if h&0x7f80 == 0x7f80 && h&0x7f != 0 {
			continue
		}
		if back := F32ToBF16(BF16ToF32(uint16(h))); back != uint16(h) {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x", h, back)
		}
	}
}
