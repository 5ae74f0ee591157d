package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/skulk/skulk/internal/engine/tensor"
)

func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func readTestModel(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "models", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sample builds a file exercising every metadata type and two tensors.
func sample(t testing.TB) (*Writer, []byte) {
	t.Helper()
	w := NewWriter()
	w.Set("general.architecture", "llama")
	w.Set("u8", uint8(7))
	w.Set("i8", int8(-7))
	w.Set("u16", uint16(65535))
	w.Set("i16", int16(-300))
	w.Set("u32", uint32(1<<31))
	w.Set("i32", int32(-1<<31))
	w.Set("f32", float32(1.5))
	w.Set("bool", true)
	w.Set("str", "héllo")
	w.Set("u64", uint64(math.MaxUint64))
	w.Set("i64", int64(math.MinInt64))
	w.Set("f64", math.Pi)
	w.Set("strs", []string{"a", "", "ccc"})
	w.Set("f32s", []float32{1, -2, 3.25})
	w.Set("i32s", []int32{1, -2, 3})
	w.Set("bools", []bool{true, false})
	w.Set("nested", Array{Elem: TypeArray, Values: []Array{
		{Elem: TypeUint8, Values: []uint8{1, 2}},
		{Elem: TypeString, Values: []string{"x"}},
	}})
	w.Set("general.alignment", uint32(64))
	a := make([]byte, 4*8*3)
	for i := range a {
		a[i] = byte(i)
	}
	w.AddTensor("a", tensor.F32, []uint64{8, 3}, a)
	q := make([]byte, 34*2)
	for i := range q {
		q[i] = byte(255 - i)
	}
	w.AddTensor("q", tensor.Q8_0, []uint64{32, 2}, q)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return w, buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	w, b := sample(t)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 64 || f.DataOffset%64 != 0 {
		t.Fatalf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	if !reflect.DeepEqual(f.KVs, w.kvs) {
		t.Fatalf("metadata differs:\n got %#v\nwant %#v", f.KVs, w.kvs)
	}
	for _, wt := range w.tensors {
		got, err := f.TensorData(wt.info.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, wt.data) {
			t.Fatalf("tensor %s data differs", wt.info.Name)
		}
		ti, _ := f.Tensor(wt.info.Name)
		if ti.Offset%64 != 0 || !reflect.DeepEqual(ti.Dims, wt.info.Dims) || ti.Type != wt.info.Type {
			t.Fatalf("tensor info %+v", ti)
		}
	}
	if s, _ := f.String("str"); s != "héllo" {
		t.Errorf("String = %q", s)
	}
	if u, ok := f.Uint("u16"); !ok || u != 65535 {
		t.Errorf("Uint(u16) = %d %v", u, ok)
	}
	if _, ok := f.Uint("i8"); ok {
		t.Error("Uint of a negative value must fail")
	}
	if i, ok := f.Int32s("i32s"); !ok || !reflect.DeepEqual(i, []int32{1, -2, 3}) {
		t.Errorf("Int32s = %v", i)
	}
	if _, err := f.TensorData("missing"); !errors.Is(err, ErrNoTensor) {
		t.Errorf("missing tensor: %v", err)
	}
}

// TestRewriteRealFile re-encodes real GGUF files with the writer and checks
// the result parses to the same metadata and tensor bytes.
func TestRewriteRealFile(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "llama-2-tiny-random.gguf"} {
		t.Run(name, func(t *testing.T) {
			f, err := Open(filepath.Join(repoRoot(t), "testdata", "models", name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			w := NewWriter()
			for _, kv := range f.KVs {
				w.Set(kv.Key, kv.Value.V)
			}
			for _, ti := range f.Tensors {
				d, err := f.TensorData(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				w.AddTensor(ti.Name, ti.Type, ti.Dims, d)
			}
			var buf bytes.Buffer
			if _, err := w.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			g, err := Parse(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g.KVs, f.KVs) || len(g.Tensors) != len(f.Tensors) {
				t.Fatal("metadata differs after rewrite")
			}
			for _, ti := range f.Tensors {
				a, _ := f.TensorData(ti.Name)
				b, _ := g.TensorData(ti.Name)
				if !bytes.Equal(a, b) {
					t.Fatalf("tensor %s differs", ti.Name)
				}
			}
		})
	}
}

// TestRealFiles opens every GGUF in testdata and ../shared and checks the
// structure llama.cpp reports for them.
func TestRealFiles(t *testing.T) {
	f, err := Open(filepath.Join(repoRoot(t), "testdata", "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Architecture() != "llama" || len(f.Tensors) != 48 {
		t.Fatalf("arch %q, %d tensors", f.Architecture(), len(f.Tensors))
	}
	if n, _ := f.Uint("llama.block_count"); n != 5 {
		t.Errorf("block_count %d", n)
	}
	if toks, _ := f.Strings("tokenizer.ggml.tokens"); len(toks) != 512 {
		t.Errorf("%d tokens", len(toks))
	}
	emb, _ := f.Tensor("token_embd.weight")
	if emb.Type != tensor.F32 || !reflect.DeepEqual(emb.Dims, []uint64{64, 512}) {
		t.Errorf("token_embd %+v", emb)
	}
	shared := filepath.Join(repoRoot(t), "..", "shared", "models")
	paths, _ := filepath.Glob(filepath.Join(shared, "*", "*.gguf"))
	if len(paths) == 0 {
		t.Logf("skipping the ../shared models: none under %s", shared)
	}
	for _, p := range paths {
		g, err := Open(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		g.Close()
	}
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func gstr(s string) []byte { return cat(le64(uint64(len(s))), []byte(s)) }

func hdr(version uint32, nt, nkv uint64) []byte {
	return cat([]byte("GGUF"), le32(version), le64(nt), le64(nkv))
}

func tinfo(name string, dims []uint64, typ tensor.Type, off uint64) []byte {
	b := cat(gstr(name), le32(uint32(len(dims))))
	for _, d := range dims {
		b = cat(b, le64(d))
	}
	return cat(b, le32(uint32(typ)), le64(off))
}

// pad fills b to the default alignment (32).
func pad(b []byte) []byte {
	for len(b)%32 != 0 {
		b = append(b, 0)
	}
	return b
}

// f32s is an F32 tensor info of n elements at off: 4n bytes.
func f32s(name string, n, off uint64) []byte { return tinfo(name, []uint64{n}, tensor.F32, off) }

// layout is a whole file of F32 tensors with the given infos and a data
// section of dataLen bytes.
func layout(dataLen int, infos ...[]byte) []byte {
	return cat(pad(cat(append([][]byte{hdr(3, uint64(len(infos)), 0)}, infos...)...)), make([]byte, dataLen))
}

// overlapCases are files whose tensors share bytes, with the pair of
// tensors the reader must name (A starts first).
var overlapCases = []struct {
	name string
	in   []byte
	a, b string
}{
	{"aliased tensors", layout(64, f32s("a", 8, 0), f32s("b", 8, 0)), "a", "b"},
	{"aliased, different sizes", layout(64, f32s("big", 16, 0), f32s("small", 8, 0)), "big", "small"},
	{"second starts inside the first", layout(96, f32s("a", 16, 0), f32s("b", 8, 32)), "a", "b"},
	{"overlap out of file order", layout(128, f32s("c", 8, 64), f32s("b", 16, 32), f32s("a", 8, 0)), "b", "c"},
	{"nested in a long earlier tensor", layout(160, f32s("x", 8, 96), f32s("long", 32, 0), f32s("y", 8, 128)), "long", "x"},
}

func TestMalformed(t *testing.T) {
	kvU32 := func(k string, v uint32) []byte { return cat(gstr(k), le32(uint32(TypeUint32)), le32(v)) }
	cases := []struct {
		name  string
		in    []byte
		kind  error
		field string
	}{
		{"empty", nil, ErrTruncated, "magic"},
		{"bad magic", []byte("GGML\x03\x00\x00\x00"), ErrNotGGUF, "magic"},
		{"version 1", hdr(1, 0, 0), ErrVersion, "version"},
		{"version 4", hdr(4, 0, 0), ErrVersion, "version"},
		{"truncated counts", hdr(3, 0, 0)[:16], ErrTruncated, "kv_count"},
		{"huge tensor count", hdr(3, 1<<62, 0), ErrLimit, "tensor_count"},
		{"tensor count past the file", hdr(3, 1000, 0), ErrTooLarge, "tensor_count"},
		{"huge kv count", hdr(3, 0, math.MaxUint64), ErrLimit, "kv_count"},
		{"kv count past the file", hdr(3, 0, 1000), ErrTooLarge, "kv_count"},
		{"key longer than file", cat(hdr(3, 0, 1), le64(1<<40), []byte("abc"), make([]byte, 10)), ErrInvalid, "kv[0].key"},
		{"string longer than file", cat(hdr(3, 0, 1), gstr("k"), le32(uint32(TypeString)), le64(1000), make([]byte, 4)), ErrTruncated, `kv["k"]`},
		{"string longer than the limit", cat(hdr(3, 0, 1), gstr("k"), le32(uint32(TypeString)), le64(1<<50), make([]byte, 4)), ErrLimit, `kv["k"]`},
		{"bad value type", cat(hdr(3, 0, 1), gstr("k"), le32(13), make([]byte, 8)), ErrInvalid, `kv["k"].type`},
		{"array count too large", cat(hdr(3, 0, 1), gstr("k"), le32(uint32(TypeArray)), le32(uint32(TypeUint32)), le64(1000), make([]byte, 16)), ErrTooLarge, `kv["k"].count`},
		{"array count past the limit", cat(hdr(3, 0, 1), gstr("k"), le32(uint32(TypeArray)), le32(uint32(TypeUint32)), le64(1<<40), make([]byte, 16)), ErrLimit, `kv["k"].count`},
		{"bool not 0/1", cat(hdr(3, 0, 1), gstr("k"), le32(uint32(TypeBool)), []byte{2}), ErrInvalid, `kv["k"]`},
		{"duplicate key", cat(hdr(3, 0, 2), kvU32("k", 1), kvU32("k", 2)), ErrDuplicate, "kv[1].key"},
		{"alignment not power of two", cat(hdr(3, 0, 1), kvU32("general.alignment", 24)), ErrInvalid, "general.alignment"},
		{"too many dims", pad(cat(hdr(3, 1, 0), tinfo("t", []uint64{1, 1, 1, 1, 1}, tensor.F32, 0))), ErrInvalid, `tensor["t"].n_dims`},
		{"zero dim", pad(cat(hdr(3, 1, 0), tinfo("t", []uint64{4, 0}, tensor.F32, 0))), ErrInvalid, `tensor["t"].dims[1]`},
		{"dims overflow", pad(cat(hdr(3, 1, 0), tinfo("t", []uint64{1 << 40, 1 << 40}, tensor.F32, 0))), ErrInvalid, `tensor["t"].dims[1]`},
		{"unknown tensor type", pad(cat(hdr(3, 1, 0), tinfo("t", []uint64{4}, 4, 0))), ErrInvalid, `tensor["t"].type`},
		{"row not whole blocks", pad(cat(hdr(3, 1, 0), tinfo("t", []uint64{16}, tensor.Q8_0, 0))), ErrInvalid, `tensor["t"].dims[0]`},
		{"data past end", cat(pad(cat(hdr(3, 1, 0), tinfo("t", []uint64{8}, tensor.F32, 0))), make([]byte, 16)), ErrTruncated, `tensor["t"].offset`},
		{"misaligned offset", cat(pad(cat(hdr(3, 1, 0), tinfo("t", []uint64{1}, tensor.F32, 4))), make([]byte, 64)), ErrInvalid, `tensor["t"].offset`},
		{"duplicate tensor", cat(pad(cat(hdr(3, 2, 0), tinfo("t", []uint64{1}, tensor.F32, 0), tinfo("t", []uint64{1}, tensor.F32, 32))), make([]byte, 64)), ErrDuplicate, "tensor[1].name"},
		{"offset overflow", cat(pad(cat(hdr(3, 1, 0), tinfo("t", []uint64{8}, tensor.F32, math.MaxUint64-31))), make([]byte, 64)), ErrTruncated, `tensor["t"].offset`},
		{"overlap past end", layout(32, f32s("a", 8, 0), f32s("b", 16, 0)), ErrTruncated, `tensor["b"].offset`},
	}
	for _, c := range overlapCases {
		cases = append(cases, struct {
			name  string
			in    []byte
			kind  error
			field string
		}{c.name, c.in, ErrOverlap, fmt.Sprintf("tensor[%q].offset", c.b)})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.in)
			if !errors.Is(err, c.kind) {
				t.Fatalf("err = %v, want %v", err, c.kind)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("err = %v, want field %q", err, c.field)
			}
		})
	}
}

// TestOverlap checks the tensors an overlap error names, in both Parse and
// ParseHeader, and that tensors which only touch are accepted.
func TestOverlap(t *testing.T) {
	for _, c := range overlapCases {
		t.Run(c.name, func(t *testing.T) {
			for name, parse := range map[string]func([]byte) (*File, error){"Parse": Parse, "ParseHeader": ParseHeader} {
				f, err := parse(c.in)
				var oe *TensorOverlapError
				if f != nil || !errors.As(err, &oe) || !errors.Is(err, ErrOverlap) {
					t.Fatalf("%s: file %v, err %v; want a *TensorOverlapError", name, f != nil, err)
				}
				if oe.A != c.a || oe.B != c.b || oe.BStart >= oe.AEnd || oe.AStart > oe.BStart {
					t.Errorf("%s: %+v, want tensors %q and %q with overlapping ranges", name, oe, c.a, c.b)
				}
			}
		})
	}
	for _, c := range []struct {
		name string
		in   []byte
	}{
		{"touching", layout(64, f32s("a", 8, 0), f32s("b", 8, 32))},
		{"touching out of file order", layout(96, f32s("c", 8, 64), f32s("a", 8, 0), f32s("b", 8, 32))},
		{"gap", layout(128, f32s("a", 8, 0), f32s("b", 8, 96))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Parse(c.in); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFirstOverlap covers what the file layouts cannot reach: empty ranges
// and many tensors.
func TestFirstOverlap(t *testing.T) {
	ti := func(off uint64, size int64) TensorInfo { return TensorInfo{Offset: off, Size: size} }
	many := make([]TensorInfo, 100000)
	for i := range many {
		many[i] = ti(uint64(len(many)-1-i)*32, 32) // reverse order, touching
	}
	manyBad := append(slices.Clone(many), ti(32*500+16, 8))
	cases := []struct {
		name string
		in   []TensorInfo
		a, b int
		ok   bool
	}{
		{"none", nil, 0, 0, false},
		{"empty at another's start", []TensorInfo{ti(0, 32), ti(0, 0)}, 0, 0, false},
		{"empty inside another", []TensorInfo{ti(0, 32), ti(16, 0)}, 0, 0, false},
		{"two empties at one offset", []TensorInfo{ti(0, 0), ti(0, 0)}, 0, 0, false},
		{"alias after an empty", []TensorInfo{ti(0, 0), ti(0, 32), ti(0, 32)}, 1, 2, true},
		{"end saturates", []TensorInfo{ti(math.MaxUint64-8, 32), ti(math.MaxUint64-1, 1)}, 0, 1, true},
		{"many touching", many, 0, 0, false},
		{"many, one inside", manyBad, len(many) - 1 - 500, len(many), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b, ok := firstOverlap(c.in)
			if ok != c.ok || (ok && (a != c.a || b != c.b)) {
				t.Fatalf("firstOverlap = %d, %d, %v; want %d, %d, %v", a, b, ok, c.a, c.b, c.ok)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	notGGUF := filepath.Join(dir, "x.gguf")
	os.WriteFile(notGGUF, []byte("hello world, not a model"), 0o644)
	if _, err := Open(notGGUF); !errors.Is(err, ErrNotGGUF) {
		t.Errorf("not gguf: %v", err)
	}
	if _, err := Open(dir); err == nil {
		t.Error("opening a directory must fail")
	}
}

func TestWriterErrors(t *testing.T) {
	w := NewWriter()
	w.AddTensor("t", tensor.Q8_0, []uint64{32}, make([]byte, 10))
	if _, err := w.WriteTo(&bytes.Buffer{}); err == nil {
		t.Error("wrong data size must fail")
	}
	w = NewWriter()
	w.Set("k", struct{}{})
	if _, err := w.WriteTo(&bytes.Buffer{}); err == nil {
		t.Error("unsupported Go type must fail")
	}
}

// checkParsed asserts the invariants of any successfully parsed file.
func checkParsed(t *testing.T, f *File, n int) {
	for _, ti := range f.Tensors {
		d, err := f.TensorData(ti.Name)
		if err != nil || int64(len(d)) != ti.Size {
			t.Fatalf("tensor %s: %v (%d bytes, want %d)", ti.Name, err, len(d), ti.Size)
		}
		if f.DataOffset+int64(ti.Offset)+ti.Size > int64(n) {
			t.Fatalf("tensor %s past the end", ti.Name)
		}
	}
	// Quadratic on purpose: a second way to find an overlap than the reader's.
	for i, a := range f.Tensors {
		for _, b := range f.Tensors[i+1:] {
			if a.Offset < b.Offset+uint64(b.Size) && b.Offset < a.Offset+uint64(a.Size) {
				t.Fatalf("tensors %s and %s overlap", a.Name, b.Name)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	_, small := sample(f)
	f.Add(small)
	real := readTestModel(f, "stories260K.gguf")
	// The metadata and tensor infos of stories260K end well inside its first
	// 16 KiB; truncations and bit flips of that region reach every field.
	head := real[:16384]
	for cut := 0; cut < len(head); cut += 211 {
		f.Add(head[:cut])
	}
	for pos := 0; pos < 2048; pos += 37 {
		b := append([]byte(nil), small...)
		b[pos%len(b)] ^= 1 << (pos % 8)
		f.Add(b)
		h := append([]byte(nil), head...)
		h[pos*7%len(h)] ^= 0x80
		f.Add(h)
	}
	for _, c := range overlapCases {
		f.Add(c.in)
	}
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var file *File
		err, alloc, _ := parseMeasured(func(b []byte) (*File, error) {
			var err error
			file, err = Parse(b)
			return file, err
		}, b)
		checkBudget(t, b, alloc)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		checkParsed(t, file, len(b))
	})
}
