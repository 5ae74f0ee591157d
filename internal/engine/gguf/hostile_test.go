package gguf

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// kvHead starts a file of nKV metadata entries whose first is key, of type t.
func kvHead(nKV uint64, key string, t ValueType) *bytes.Buffer {
	var b bytes.Buffer
	b.Write(hdr(3, 0, nKV))
	b.Write(gstr(key))
	b.Write(le32(uint32(t)))
	return &b
}

// deepArrays is one entry whose value is depth arrays of arrays, each of
// one element, around an empty uint8 array. (testkit.DeepArraysGGUF is the
// same for other packages; this package's own tests cannot import testkit.)
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

// TestBudgetRefuses drives the budget itself: the structural limits keep
// every corpus file below it, so it is a backstop the corpus cannot reach.
func TestBudgetRefuses(t *testing.T) {
	for _, n := range []int{0, 10, 1 << 20} {
		d := newDecoder(make([]byte, n))
		if err := d.charge("x", ParseBudget(n)); err != nil {
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
		deepArrays(MaxNesting),
		deepArrays(MaxNesting + 1),
		deepArrays(64),
		cat(kvHead(1, "k", TypeArray).Bytes(), le32(uint32(TypeString)), le64(3), gstr("a"), gstr(""), gstr("bc")),
		cat(kvHead(2, "k", TypeArray).Bytes(), le32(uint32(TypeArray)), le64(2), le32(uint32(TypeUint8)), le64(1), []byte{1}, le32(uint32(TypeBool)), le64(1), []byte{1}),
		pad(cat(hdr(3, 2, 0), tinfo("a", []uint64{1 << 22, 1 << 22}, tensor.F32, 0), tinfo("b", []uint64{1 << 22, 1 << 22}, tensor.F32, 1<<45))),
	}
}

// checkBudget fails t when parsing b allocated more than the budget.
func checkBudget(t *testing.T, b []byte, alloc uint64) {
	t.Helper()
	if limit := uint64(ParseBudget(len(b))); alloc > limit {
		t.Fatalf("allocated %d bytes for a %d-byte input, the budget is %d", alloc, len(b), limit)
	}
}

// TestRealHeadersWithinBudget parses real headers and checks they take well
// under the budget the hostile ones are held to.
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
