package dataplane

import (
	"encoding/binary"
	"fmt"
)

// Object record ABI.
const (
	ObjectMagic     uint32 = 0x4a424f53 // "SOBJ" little-endian
	ObjectVersion   uint16 = 1
	ObjectHeaderLen        = 40
)

// SequencePolicy is an edge's inference-step ordering rule.
type SequencePolicy uint8

const (
	// SequenceContiguous: the first object is step 0 (prefill), each next
	// one is the previous plus one.
	SequenceContiguous SequencePolicy = iota + 1
	// SequenceIncreasing: each object's step is strictly above the last.
	SequenceIncreasing
	// SequenceAny: no ordering rule.
	SequenceAny
)

// ObjectSpec is the edge's validation contract for object records.
type ObjectSpec struct {
	MaxExtent uint64
	Alignment uint32 // extent must be a multiple; 0 or 1 means any
	Sequence  SequencePolicy
}

// ObjectHeader is the runtime part of an object record.
type ObjectHeader struct {
	ObjectID ObjectID
	Sequence uint64
	Extent   uint64
	Flags    uint32
}

// Put encodes h into b, which holds at least ObjectHeaderLen bytes.
func (h ObjectHeader) Put(b []byte) {
	_ = b[ObjectHeaderLen-1]
	binary.LittleEndian.PutUint32(b[0:], ObjectMagic)
	binary.LittleEndian.PutUint16(b[4:], ObjectVersion)
	binary.LittleEndian.PutUint16(b[6:], ObjectHeaderLen)
	binary.LittleEndian.PutUint64(b[8:], uint64(h.ObjectID))
	binary.LittleEndian.PutUint64(b[16:], h.Sequence)
	binary.LittleEndian.PutUint64(b[24:], h.Extent)
	binary.LittleEndian.PutUint32(b[32:], h.Flags)
	binary.LittleEndian.PutUint32(b[36:], 0)
}

// DecodeObjectHeader parses the fixed header; it checks the framing fields
// only. The edge's ObjectSpec is applied by sequenceCheck and Validate.
func DecodeObjectHeader(edge EdgeID, b []byte) (ObjectHeader, error) {
	fail := func(r ObjectFailure, format string, a ...any) (ObjectHeader, error) {
		return ObjectHeader{}, &ObjectError{Edge: edge, Reason: r, Detail: fmt.Sprintf(format, a...)}
	}
	if len(b) < ObjectHeaderLen {
		return fail(HeaderMalformed, "%d header bytes, want %d", len(b), ObjectHeaderLen)
	}
	if m := binary.LittleEndian.Uint32(b[0:]); m != ObjectMagic {
		return fail(HeaderMalformed, "bad magic %#x", m)
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != ObjectVersion {
		return fail(UnsupportedObjectVersion, "version %d, want %d", v, ObjectVersion)
	}
	if n := binary.LittleEndian.Uint16(b[6:]); n != ObjectHeaderLen {
		return fail(HeaderMalformed, "header_len %d, want %d", n, ObjectHeaderLen)
	}
	if r := binary.LittleEndian.Uint32(b[36:]); r != 0 {
		return fail(HeaderMalformed, "reserved field %#x is not zero", r)
	}
	return ObjectHeader{
		ObjectID: ObjectID(binary.LittleEndian.Uint64(b[8:])),
		Sequence: binary.LittleEndian.Uint64(b[16:]),
		Extent:   binary.LittleEndian.Uint64(b[24:]),
		Flags:    binary.LittleEndian.Uint32(b[32:]),
	}, nil
}

// sequenceTracker applies an ObjectSpec to successive headers on one edge.
type sequenceTracker struct {
	spec ObjectSpec
	edge EdgeID
	last uint64
	seen bool
}

// check validates h and, when it is valid, records its sequence.
func (s *sequenceTracker) check(h ObjectHeader) error {
	fail := func(r ObjectFailure, format string, a ...any) error {
		return &ObjectError{Edge: s.edge, Object: h.ObjectID, HasID: true, Sequence: h.Sequence,
			Reason: r, Detail: fmt.Sprintf(format, a...)}
	}
	if h.Extent > s.spec.MaxExtent {
		return fail(ExtentExceedsMax, "extent %d exceeds max %d", h.Extent, s.spec.MaxExtent)
	}
	if a := uint64(s.spec.Alignment); a > 1 && h.Extent%a != 0 {
		return fail(ExtentAlignmentInvalid, "extent %d is not a multiple of %d", h.Extent, a)
	}
	switch s.spec.Sequence {
	case SequenceContiguous:
		want := uint64(0)
		if s.seen {
			want = s.last + 1
		}
		if h.Sequence != want {
			return fail(SequenceViolation, "sequence %d, want %d", h.Sequence, want)
		}
	case SequenceIncreasing:
		if s.seen && h.Sequence <= s.last {
			return fail(SequenceViolation, "sequence %d not above %d", h.Sequence, s.last)
		}
	case SequenceAny:
	default:
		return fail(SequenceViolation, "edge has unknown sequence policy %d", s.spec.Sequence)
	}
	s.last, s.seen = h.Sequence, true
	return nil
}
