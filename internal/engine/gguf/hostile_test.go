package gguf

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// hostileCase is a crafted header the reader must refuse with kind.
type hostileCase struct {
	name string
	in   []byte
	kind error
}

// kvHead starts a file of nKV metadata entries whose first is key, of type t.
func kvHead(nKV uint64, key string, t ValueType) *bytes.Buffer {
	var b bytes.Buffer
	b.Write(hdr(3, 0, nKV))
	b.Write(gstr(key))
	b.Write(le32(uint32(t)))
	return &b
}

// deepArrays is one entry whose value is depth arrays of arrays, each of
// one element, around an empty uint8 array: 12 bytes per level.
func deepArrays(depth int) []byte {
	b := kvHead(1, "k", TypeArray)
	for range depth - 1 {
		b.Write(le32(uint32(TypeArray)))
		b.Write(le64(1))
	}
	b.Write(le32(uint32(TypeUint8)))
	b.Write(le64(0))
	return b.Bytes()
}

// hostileHeaders is the corpus of crafted headers: each grows one dimension
// of the format past what the reader accepts (or past the file), or is
// valid up to a bad byte after a large amount of well-formed structure.
func hostileHeaders(t testing.TB) []hostileCase {
	t.Helper()
	var cs []hostileCase
	add := func(name string, in []byte, kind error) { cs = append(cs, hostileCase{name, in, kind}) }

	// Nesting depth.
	add("arrays of arrays 200000 deep", deepArrays(200000), ErrLimit)
	add("arrays of arrays one past the limit", deepArrays(maxNesting+1), ErrLimit)
	{ // 8 levels (allowed) of 16 wide each level, then a bad element type at the bottom.
		b := kvHead(1, "k", TypeArray)
		leaves := 0
		var level func(d int)
		level = func(d int) {
			if d == maxNesting {
				if leaves++; leaves == 1<<(maxNesting-1) {
					b.Write(le32(99)) // the last leaf's element type
				} else {
					b.Write(le32(uint32(TypeUint8)))
				}
				b.Write(le64(0))
				return
			}
			b.Write(le32(uint32(TypeArray)))
			b.Write(le64(2))
			level(d + 1)
			level(d + 1)
		}
		level(1)
		add("nested arrays at the limit, then a bad type", b.Bytes(), ErrInvalid)
	}

	// KV count.
	add("kv count past the file", hdr(3, 0, math.MaxUint64), ErrTooLarge)
	{
		b := bytes.NewBuffer(hdr(3, 0, maxKVs+1))
		for i := range maxKVs + 1 {
			b.Write(gstr(string(rune('a' + i%26))))
			b.Write(le32(uint32(TypeUint8)))
			b.WriteByte(0)
		}
		add("kv count one past the limit", b.Bytes(), ErrLimit)
	}
	{
		const n = 400000
		b := bytes.NewBuffer(hdr(3, 0, n+1))
		var key [4]byte
		for i := range n {
			key = [4]byte{byte(i), byte(i >> 8), byte(i >> 16), 'k'}
			b.Write(gstr(string(key[:])))
			b.Write(le32(uint32(TypeUint8)))
			b.WriteByte(0)
		}
		b.Write(gstr(string(key[:])))
		b.Write(le32(uint32(TypeUint8)))
		b.WriteByte(0)
		add("400000 entries then a duplicate key", b.Bytes(), ErrDuplicate)
	}

	// String and key lengths.
	add("string length past the file", cat(kvHead(1, "k", TypeString).Bytes(), le64(math.MaxUint64), make([]byte, 16)), ErrTruncated)
	add("string one past the limit", cat(kvHead(1, "k", TypeString).Bytes(), le64(maxStringLen+1), make([]byte, maxStringLen+1)), ErrLimit)
	add("key one past the limit", cat(hdr(3, 0, 1), gstr(strings.Repeat("k", maxKeyLen+1)), le32(uint32(TypeUint8)), []byte{0}), ErrInvalid)
	{
		b := bytes.NewBuffer(hdr(3, 0, 65))
		for i := range 64 {
			b.Write(gstr(strings.Repeat(string(rune('a'+i%26)), maxKeyLen-1) + string(rune('A'+i/26))))
			b.Write(le32(uint32(TypeUint8)))
			b.WriteByte(0)
		}
		add("64 keys of 64 KiB, then the file ends", b.Bytes(), ErrTruncated)
	}

	// Array lengths.
	add("array count past the file", cat(kvHead(1, "k", TypeArray).Bytes(), le32(uint32(TypeUint64)), le64(math.MaxUint64)), ErrTooLarge)
	add("array one past the limit", cat(kvHead(1, "k", TypeArray).Bytes(), le32(uint32(TypeUint8)), le64(maxArrayLen+1), make([]byte, maxArrayLen+1)), ErrLimit)
	{ // A long key and a long array of empty strings: field names built per
		// element would cost the key's length for each 8-byte element.
		b := kvHead(1, strings.Repeat("\x00", maxKeyLen), TypeArray)
		b.Write(le32(uint32(TypeString)))
		const n = 1 << 20
		b.Write(le64(n))
		b.Write(make([]byte, 8*(n-1)))
		b.Write(le64(1 << 40))
		add("64 KiB key, a million empty strings, then a long one", b.Bytes(), ErrTruncated)
	}
	{
		b := kvHead(1, strings.Repeat("\xff", maxKeyLen), TypeArray)
		b.Write(le32(uint32(TypeArray)))
		const n = 200000
		b.Write(le64(n))
		for range n - 1 {
			b.Write(le32(uint32(TypeUint8)))
			b.Write(le64(0))
		}
		b.Write(le32(77))
		b.Write(le64(0))
		add("64 KiB key, 200000 empty arrays, then a bad type", b.Bytes(), ErrInvalid)
	}
	{
		b := kvHead(1, "k", TypeArray)
		b.Write(le32(uint32(TypeBool)))
		const n = 1 << 22
		b.Write(le64(n))
		b.Write(make([]byte, n-1))
		b.WriteByte(2)
		add("four million bools, the last not 0 or 1", b.Bytes(), ErrInvalid)
	}

	// Tensor counts.
	add("tensor count past the file", hdr(3, 1<<62, 0), ErrTooLarge)
	{
		info := tinfo("t", []uint64{1}, tensor.F32, 0)
		b := bytes.NewBuffer(hdr(3, maxTensors+1, 0))
		b.Write(bytes.Repeat(info, maxTensors+1))
		add("tensor count one past the limit", b.Bytes(), ErrLimit)
	}
	{
		const n = 200000
		b := bytes.NewBuffer(hdr(3, n, 0))
		for i := range n {
			b.Write(tinfo(string([]byte{byte(i), byte(i >> 8), byte(i >> 16), 't'}), []uint64{8}, tensor.F32, 0))
		}
		add("200000 tensors at one offset", cat(pad(b.Bytes()), make([]byte, 32)), ErrOverlap)
	}
	{
		const n = 200000
		b := bytes.NewBuffer(hdr(3, n+1, 0))
		for i := range n {
			b.Write(tinfo(string([]byte{byte(i), byte(i >> 8), byte(i >> 16), 't'}), []uint64{8}, tensor.F32, uint64(32*i)))
		}
		b.Write(tinfo("\x00\x00\x00t", []uint64{8}, tensor.F32, 0))
		add("200000 tensors then a duplicate name", pad(b.Bytes()), ErrDuplicate)
	}
	add("tensor name one past the limit", pad(cat(hdr(3, 1, 0), tinfo(strings.Repeat("n", maxKeyLen+1), []uint64{1}, tensor.F32, 0))), ErrInvalid)

	// Dimensions.
	add("dims count 2^32-1", cat(hdr(3, 1, 0), gstr("t"), le32(math.MaxUint32), make([]byte, 64)), ErrInvalid)
	add("dims count one past the limit", pad(cat(hdr(3, 1, 0), tinfo("t", []uint64{1, 1, 1, 1, 1}, tensor.F32, 0))), ErrInvalid)
	add("dims product overflows", pad(cat(hdr(3, 1, 0), tinfo("t", []uint64{1 << 32, 1 << 32}, tensor.F32, 0))), ErrInvalid)
	add("dims product past the tensor limit", pad(cat(hdr(3, 1, 0), tinfo("t", []uint64{1 << 30, 1 << 30}, tensor.F32, 0))), ErrLimit)
	{
		b := bytes.NewBuffer(hdr(3, 5, 0))
		for i := range 5 {
			b.Write(tinfo(string(rune('a'+i)), []uint64{1 << 22, 1 << 22}, tensor.F32, uint64(i)<<45))
		}
		add("tensor sizes sum past the limit", pad(b.Bytes()), ErrLimit)
	}
	add("alignment 2^31", cat(hdr(3, 0, 1), gstr("general.alignment"), le32(uint32(TypeUint32)), le32(1<<31)), ErrInvalid)
	return cs
}

// parseMeasured parses in with parse and reports the error, the bytes the
// runtime allocated meanwhile and how long it took.
func parseMeasured(parse func([]byte) (*File, error), in []byte) (error, uint64, time.Duration) {
	// TotalAlloc is cumulative and exact when read, so no GC is needed
	// first; the fuzz targets call this for every input.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := parse(in)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return err, after.TotalAlloc - before.TotalAlloc, took
}

// TestHostileHeaders refuses every crafted header with a typed error
// within 1 s, both as a whole file and as a header prefix, and allocating
// no more than the stated budget: allocFactor bytes per input byte plus
// allocSlack, however the header is built.
func TestHostileHeaders(t *testing.T) {
	cs := hostileHeaders(t)
	if len(cs) < 20 {
		t.Fatalf("the corpus has %d cases, want at least 20", len(cs))
	}
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range []struct {
				name  string
				parse func([]byte) (*File, error)
			}{{"Parse", Parse}, {"ParseHeader", ParseHeader}} {
				err, alloc, took := parseMeasured(p.parse, c.in)
				kind := c.kind
				if p.name == "ParseHeader" && kind == ErrTooLarge {
					kind = ErrTruncated // a prefix may be too short for what it promises
				}
				var fe *FormatError
				if !errors.Is(err, kind) || !errors.As(err, &fe) {
					t.Fatalf("%s: err = %v, want a *FormatError of kind %v", p.name, err, kind)
				}
				if took > time.Second {
					t.Errorf("%s: took %v, want at most 1s", p.name, took)
				}
				if limit := uint64(budgetFor(len(c.in))); alloc > limit {
					t.Errorf("%s: allocated %d bytes for a %d-byte file, want at most %d", p.name, alloc, len(c.in), limit)
				}
				t.Logf("%s: %d bytes in, %d allocated (%.2f per byte), %v: %v", p.name, len(c.in), alloc, float64(alloc)/float64(len(c.in)), took, err)
			}
		})
	}
}

// TestRealHeadersWithinBudget parses real files and checks they are well
// inside the budget the hostile ones are held to.
func TestRealHeadersWithinBudget(t *testing.T) {
	for _, name := range []string{"stories260K.gguf"} {
		t.Run(name, func(t *testing.T) {
			b := readTestModel(t, name)
			f, err := ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			err, alloc, took := parseMeasured(ParseHeader, b[:f.DataOffset])
			if err != nil {
				t.Fatal(err)
			}
			if per := float64(alloc) / float64(f.DataOffset); per > allocFactor/2 {
				t.Errorf("a real header takes %.2f bytes per byte, more than half the budget's %d", per, allocFactor)
			}
			t.Logf("%d-byte header: %d allocated, %v", f.DataOffset, alloc, took)
		})
	}
}

// TestBudgetRefuses drives the budget itself: the structural limits keep
// every corpus file below it, so it is a backstop the corpus cannot reach.
func TestBudgetRefuses(t *testing.T) {
	for _, n := range []int{0, 10, 1 << 20} {
		d := newDecoder(make([]byte, n))
		if err := d.charge("x", budgetFor(n)); err != nil {
			t.Fatalf("%d bytes: charging the whole budget: %v", n, err)
		}
		err := d.charge("y", 1)
		var le *LimitError
		if !errors.Is(err, ErrLimit) || !errors.As(err, &le) || le.Limit != "header memory" {
			t.Fatalf("%d bytes: one byte past the budget: %v", n, err)
		}
	}
}

// fuzzSeeds are small members of the hostile corpus's families.
func fuzzSeeds() [][]byte {
	return [][]byte{
		deepArrays(maxNesting),
		deepArrays(maxNesting + 1),
		deepArrays(64),
		cat(kvHead(1, "k", TypeArray).Bytes(), le32(uint32(TypeString)), le64(3), gstr("a"), gstr(""), gstr("bc")),
		cat(kvHead(2, "k", TypeArray).Bytes(), le32(uint32(TypeArray)), le64(2), le32(uint32(TypeUint8)), le64(1), []byte{1}, le32(uint32(TypeBool)), le64(1), []byte{1}),
		pad(cat(hdr(3, 2, 0), tinfo("a", []uint64{1 << 22, 1 << 22}, tensor.F32, 0), tinfo("b", []uint64{1 << 22, 1 << 22}, tensor.F32, 1<<45))),
	}
}

// checkBudget fails t when parsing b allocated more than the budget.
func checkBudget(t *testing.T, b []byte, alloc uint64) {
	t.Helper()
	if limit := uint64(budgetFor(len(b))); alloc > limit {
		t.Fatalf("allocated %d bytes for a %d-byte input, the budget is %d", alloc, len(b), limit)
	}
}
