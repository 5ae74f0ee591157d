//go:build linux

package dataplane

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"
)

func rawHeader(h ObjectHeader, mutate func(b []byte)) []byte {
	b := make([]byte, ObjectHeaderLen)
	h.Put(b)
	if mutate != nil {
		mutate(b)
	}
	return b
}

func openPair(t *testing.T, f *ringFixture) (*Producer, *Consumer) {
	t.Helper()
	p, err := OpenProducer(f.arena.Bytes(), f.layout, f.readable, f.writable)
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenConsumer(f.arena.Bytes(), f.layout, f.readable, f.writable)
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func TestObjectValidationFailures(t *testing.T) {
	spec := ObjectSpec{MaxExtent: 1 << 20, Alignment: 4, Sequence: SequenceContiguous}
	ok := func(seq uint64, extent uint64) []byte {
		return append(rawHeader(ObjectHeader{ObjectID: 1, Sequence: seq, Extent: extent}, nil), make([]byte, extent)...)
	}
	tests := []struct {
		name   string
		spec   ObjectSpec
		stream [][]byte
		want   ObjectFailure
		hasID  bool
	}{
		{"bad_magic", spec, [][]byte{rawHeader(ObjectHeader{}, func(b []byte) { b[0] ^= 0xff })}, HeaderMalformed, false},
		{"unsupported_version", spec, [][]byte{rawHeader(ObjectHeader{}, func(b []byte) { binary.LittleEndian.PutUint16(b[4:], 9) })}, UnsupportedObjectVersion, false},
		{"bad_header_len", spec, [][]byte{rawHeader(ObjectHeader{}, func(b []byte) { binary.LittleEndian.PutUint16(b[6:], 64) })}, HeaderMalformed, false},
		{"reserved_not_zero", spec, [][]byte{rawHeader(ObjectHeader{}, func(b []byte) { b[36] = 1 })}, HeaderMalformed, false},
		{"extent_exceeds_max", spec, [][]byte{rawHeader(ObjectHeader{Extent: 1<<20 + 4}, nil)}, ExtentExceedsMax, true},
		{"absurd_extent_no_allocation", spec, [][]byte{rawHeader(ObjectHeader{Extent: 1 << 62}, nil)}, ExtentExceedsMax, true},
		{"extent_misaligned", spec, [][]byte{rawHeader(ObjectHeader{Extent: 6}, nil)}, ExtentAlignmentInvalid, true},
		{"first_sequence_not_zero", spec, [][]byte{ok(1, 4)}, SequenceViolation, true},
		{"sequence_gap", spec, [][]byte{ok(0, 4), ok(2, 4)}, SequenceViolation, true},
		{"sequence_repeat_increasing", ObjectSpec{MaxExtent: 64, Sequence: SequenceIncreasing}, [][]byte{ok(5, 4), ok(5, 4)}, SequenceViolation, true},
		{"eof_mid_header", spec, [][]byte{rawHeader(ObjectHeader{Extent: 8}, nil)[:20]}, EOFMidObject, false},
		{"eof_mid_payload", spec, [][]byte{rawHeader(ObjectHeader{ObjectID: 3, Extent: 8}, nil), {1, 2, 3}}, EOFMidObject, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRingFixture(t, 64<<10)
			p, c := openPair(t, f)
			for _, b := range tt.stream {
				if err := p.Write(t.Context(), b); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			r := NewObjectReader(c, 9, tt.spec, Identity{}, nil)
			var err error
			for err == nil {
				_, err = r.Next(t.Context(), nil)
			}
			var oe *ObjectError
			if !errors.As(err, &oe) {
				t.Fatalf("got %v, want *ObjectError", err)
			}
			if oe.Reason != tt.want || oe.HasID != tt.hasID || oe.Edge != 9 {
				t.Fatalf("got %+v, want reason %s hasID %v", oe, tt.want, tt.hasID)
			}
			// A faulted reader stays faulted.
			if _, err2 := r.Next(t.Context(), nil); err2 != err {
				t.Fatalf("second Next = %v, want sticky %v", err2, err)
			}
		})
	}
}

func TestObjectWriterRefusesInvalid(t *testing.T) {
	f := newRingFixture(t, 4096)
	p, _ := openPair(t, f)
	w := NewObjectWriter(p, 1, ObjectSpec{MaxExtent: 16, Alignment: 8, Sequence: SequenceContiguous}, Identity{}, nil)
	tests := []struct {
		name    string
		seq     uint64
		payload []byte
		want    ObjectFailure
	}{
		{"too_large", 0, make([]byte, 24), ExtentExceedsMax},
		{"misaligned", 0, make([]byte, 4), ExtentAlignmentInvalid},
		{"bad_first_sequence", 3, make([]byte, 8), SequenceViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var oe *ObjectError
			if err := w.Write(t.Context(), 1, tt.seq, 0, tt.payload); !errors.As(err, &oe) || oe.Reason != tt.want {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
		})
	}
	if span, _ := p.Reserve(); len(span) != 4096 {
		t.Fatalf("refused objects wrote bytes: %d free", len(span))
	}
}

// TestObjectsLargerThanRing streams objects several times the ring size and
// checks each arrives whole and in order.
func TestObjectsLargerThanRing(t *testing.T) {
	f := newRingFixture(t, 4096)
	p, c := openPair(t, f)
	spec := ObjectSpec{MaxExtent: 256 << 10, Sequence: SequenceContiguous}
	sizes := []int{0, 1, 4095, 4096, 4097, 100_000, 256 << 10, 7}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		w := NewObjectWriter(p, 2, spec, Identity{}, nil)
		var pos uint64
		for i, n := range sizes {
			b := make([]byte, n)
			fillPattern(b, pos)
			pos += uint64(n)
			if err := w.Write(ctx, ObjectID(100+i), uint64(i), uint32(i), b); err != nil {
				errc <- err
				return
			}
		}
		errc <- w.Close()
	}()
	r := NewObjectReader(c, 2, spec, Identity{}, nil)
	var pos uint64
	buf := make([]byte, 0, 1024)
	for i, n := range sizes {
		o, err := r.Next(ctx, buf)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		if o.Header.ObjectID != ObjectID(100+i) || o.Header.Sequence != uint64(i) || o.Header.Flags != uint32(i) || len(o.Payload) != n {
			t.Fatalf("object %d header %+v len %d", i, o.Header, len(o.Payload))
		}
		if err := checkPattern(o.Payload, pos); err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		pos += uint64(n)
	}
	if _, err := r.Next(ctx, nil); err != io.EOF {
		t.Fatalf("after last object: %v, want io.EOF", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func FuzzDecodeObjectHeader(f *testing.F) {
	f.Add(rawHeader(ObjectHeader{ObjectID: 1, Extent: 8}, nil))
	f.Add(bytes.Repeat([]byte{0xff}, ObjectHeaderLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeObjectHeader(1, b)
		if err != nil {
			var oe *ObjectError
			if !errors.As(err, &oe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		var round [ObjectHeaderLen]byte
		h.Put(round[:])
		if !bytes.Equal(round[:], b[:ObjectHeaderLen]) {
			t.Fatalf("round trip differs")
		}
	})
}
