package gguf

import (
	"errors"
	"os"
	"reflect"
	"testing"
)

// TestParseHeaderPrefixes parses every prefix length of a real file: each
// either fails as truncated (grow and retry) or yields exactly the metadata
// and tensor infos that parsing the whole file gives.
func TestParseHeaderPrefixes(t *testing.T) {
	b, err := os.ReadFile("../../../testdata/models/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	first := -1
	for n := 0; n <= int(whole.DataOffset)+64; n++ {
		f, err := ParseHeader(b[:n])
		if err != nil {
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("prefix %d: %v is not ErrTruncated", n, err)
			}
			if first >= 0 {
				t.Fatalf("prefix %d fails after prefix %d parsed: %v", n, first, err)
			}
			continue
		}
		if first < 0 {
			first = n
		}
		if f.DataOffset != whole.DataOffset || !reflect.DeepEqual(f.KVs, whole.KVs) || !reflect.DeepEqual(f.Tensors, whole.Tensors) {
			t.Fatalf("prefix %d: header differs from the whole file's", n)
		}
	}
	if first <= 0 || int64(first) > whole.DataOffset {
		t.Fatalf("the header first parsed at %d bytes; data starts at %d", first, whole.DataOffset)
	}
}

func TestParseHeaderRejects(t *testing.T) {
	b, err := os.ReadFile("../../../testdata/models/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte("GGUX"), b[4:4096]...)
	if _, err := ParseHeader(bad); !errors.Is(err, ErrNotGGUF) {
		t.Errorf("bad magic: %v", err)
	}
	v9 := append([]byte(nil), b[:4096]...)
	v9[4] = 9
	if _, err := ParseHeader(v9); !errors.Is(err, ErrVersion) {
		t.Errorf("version 9: %v", err)
	}
}

func FuzzParseHeader(f *testing.F) {
	b, err := os.ReadFile("../../../testdata/models/stories260K.gguf")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[:2048])
	f.Add(b[:64])
	for _, c := range overlapCases {
		f.Add(c.in)
	}
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		// Must not panic, must fail with a typed error and within the budget.
		err, alloc, _ := parseMeasured(ParseHeader, p)
		checkBudget(t, p, alloc)
		var fe *FormatError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("untyped error %v", err)
		}
	})
}
