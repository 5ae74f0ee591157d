package tensor

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// ggmlRef is one testdata/ggmlref/*.bin file: llama.cpp's own quantization,
// dequantization and vec-dot results for one type (see ggmlref.c there).
type ggmlRef struct {
	typ           Type
	n, nrows      int
	x, deq, a     []float32 // [nrows][n]
	q, aq         []byte    // [nrows] rows of typ, of VecDotType(typ)
	dotGeneric    []float32 // libggml-cpu-x64's vec_dot
	dotAVX2       []float32 // libggml-cpu-haswell's vec_dot
	rowB, actRowB int
}

func readGGMLRef(t *testing.T, name string) *ggmlRef {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "ggmlref", name+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:8]) != "GGMLREF1" {
		t.Fatalf("%s: bad magic", name)
	}
	r := &ggmlRef{typ: Type(binary.LittleEndian.Uint32(b[8:])), n: int(binary.LittleEndian.Uint32(b[12:])), nrows: int(binary.LittleEndian.Uint32(b[16:]))}
	rb, _ := RowBytes(r.typ, int64(r.n))
	ab, _ := RowBytes(VecDotType(r.typ), int64(r.n))
	r.rowB, r.actRowB = int(rb), int(ab)
	off := 20
	floats := func(k int) []float32 {
		x := make([]float32, k)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[off+4*i:]))
		}
		off += 4 * k
		return x
	}
	bytes := func(k int) []byte { s := b[off : off+k]; off += k; return s }
	all := r.n * r.nrows
	r.x = floats(all)
	r.q = bytes(r.rowB * r.nrows)
	r.deq = floats(all)
	r.a = floats(all)
	r.aq = bytes(r.actRowB * r.nrows)
	r.dotGeneric = floats(r.nrows)
	r.dotAVX2 = floats(r.nrows)
	if off != len(b) {
		t.Fatalf("%s: %d bytes, read %d", name, len(b), off)
	}
	return r
}

// ggmlRefTypes are the types with llama.cpp reference files.
var ggmlRefTypes = map[Type]string{Q2_K: "q2_k", Q3_K: "q3_k", IQ4_NL: "iq4_nl", IQ4_XS: "iq4_xs", MXFP4: "mxfp4"}

// TestGGMLReference checks the quantizer, dequantizer and vec-dot of each
// type against llama.cpp's own: the quantized bytes and the dequantized
// floats exactly, the generic dot product bit for bit against ggml's
// generic build, and every SIMD path this CPU runs within float rounding of
// ggml's AVX2 build.
func TestGGMLReference(t *testing.T) {
	for typ, name := range ggmlRefTypes {
		t.Run(typ.String(), func(t *testing.T) {
			r := readGGMLRef(t, name)
			if r.typ != typ {
				t.Fatalf("%s.bin holds %s", name, r.typ)
			}
			q, err := Quantize(typ, r.x)
			if err != nil {
				t.Fatal(err)
			}
			bb := typ.BlockBytes()
			for i := 0; i < len(q); i += bb {
				if string(q[i:i+bb]) != string(r.q[i:i+bb]) {
					t.Errorf("block %d (row %d) differs from llama.cpp's quantizer:\n got %x\nwant %x", i/bb, i/r.rowB, q[i:i+bb], r.q[i:i+bb])
					break
				}
			}
			deq := make([]float32, len(r.deq))
			if err := Dequantize(typ, r.q, deq); err != nil {
				t.Fatal(err)
			}
			for i := range deq {
				if math.Float32bits(deq[i]) != math.Float32bits(r.deq[i]) {
					t.Fatalf("dequantized element %d = %g, llama.cpp %g", i, deq[i], r.deq[i])
				}
			}
			for row := 0; row < r.nrows; row++ {
				w := r.q[row*r.rowB : (row+1)*r.rowB]
				act := r.aq[row*r.actRowB : (row+1)*r.actRowB]
				if got := Generic().VecDot(typ, w, act, r.n); math.Float32bits(got) != math.Float32bits(r.dotGeneric[row]) {
					t.Errorf("row %d: generic VecDot = %g, llama.cpp generic %g", row, got, r.dotGeneric[row])
				}
			}
			simdPaths(t, func(t *testing.T, k Kernels) {
				xr := make([]float32, r.n)
				for row := 0; row < r.nrows; row++ {
					w := r.q[row*r.rowB : (row+1)*r.rowB]
					act := r.aq[row*r.actRowB : (row+1)*r.actRowB]
					if err := Dequantize(VecDotType(typ), act, xr); err != nil {
						t.Fatal(err)
					}
					_, mag := exactDot(r.deq[row*r.n:(row+1)*r.n], xr)
					got := k.VecDot(typ, w, act, r.n)
					if d := math.Abs(float64(got) - float64(r.dotAVX2[row])); d > 4e-6*mag {
						t.Errorf("row %d: %s VecDot = %g, llama.cpp AVX2 %g (|Δ| %g > %g)", row, k.Name(), got, r.dotAVX2[row], d, 4e-6*mag)
					}
				}
			})
		})
	}
}
