package dataplane

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Ring header ABI, shared by every process that maps the arena.
const (
	RingMagic      uint32 = 0x47524b53 // "SKRG" little-endian
	RingVersion    uint16 = 1
	RingHeaderLen         = 256
	RingAlignment         = 64
	offCommit             = 64
	offConsume            = 128
	offState              = 192
	offWake               = 196
	stateProdClose uint32 = 1 << 0
	stateConsClose uint32 = 1 << 1
	stateFaulted   uint32 = 1 << 2
	wakeReader     uint32 = 1 << 0 // consumer sleeps until commit moves
	wakeWriter     uint32 = 1 << 1 // producer sleeps until consume moves
)

// RingDirection says which side of the node a ring serves.
type RingDirection uint8

const (
	Ingress RingDirection = iota + 1
	Egress
)

// RingSpec is the requested operating shape of a ring.
type RingSpec struct {
	DataCapacity uint64
	Alignment    uint32 // 0 means RingAlignment
	Direction    RingDirection
}

// RingLayout is the arena-relative placement of one ring. It holds offsets
// only, never pointers: each process adds its own mapping base.
type RingLayout struct {
	RingID       RingID
	ArenaOffset  uint64
	TotalLen     uint64
	HeaderOffset uint64
	DataOffset   uint64
	DataCapacity uint64
	Alignment    uint32
}

// Validate checks the layout against an arena of arenaLen bytes.
func (l RingLayout) Validate(arenaLen uint64) error {
	bad := func(format string, a ...any) error {
		return &RingFaultError{Ring: l.RingID, Reason: RingLayoutInvalid, Detail: fmt.Sprintf(format, a...)}
	}
	end := l.ArenaOffset + l.TotalLen
	switch {
	case l.TotalLen == 0 || end < l.ArenaOffset || end > arenaLen:
		return bad("range [%d,+%d) outside arena of %d bytes", l.ArenaOffset, l.TotalLen, arenaLen)
	case l.HeaderOffset%RingAlignment != 0 || l.DataOffset%RingAlignment != 0:
		return bad("header %d or data %d not %d-byte aligned", l.HeaderOffset, l.DataOffset, RingAlignment)
	case l.HeaderOffset < l.ArenaOffset || l.HeaderOffset+RingHeaderLen > l.DataOffset:
		return bad("header at %d does not precede data at %d", l.HeaderOffset, l.DataOffset)
	case l.DataCapacity == 0 || l.DataOffset+l.DataCapacity < l.DataOffset || l.DataOffset+l.DataCapacity > end:
		return bad("data [%d,+%d) outside lease ending at %d", l.DataOffset, l.DataCapacity, end)
	}
	return nil
}

// ringCore is the shared state of one ring as seen from one process.
type ringCore struct {
	id       RingID
	capacity uint64
	data     []byte
	commit   *atomic.Uint64
	consume  *atomic.Uint64
	state    *atomic.Uint32
	wake     *atomic.Uint32
}

// InitRing writes a fresh header for layout into arena. Only the node
// process does this, before it hands the layout to either side.
func InitRing(arena []byte, l RingLayout) error {
	if err := l.Validate(uint64(len(arena))); err != nil {
		return err
	}
	h := arena[l.HeaderOffset : l.HeaderOffset+RingHeaderLen]
	clear(h)
	binary.LittleEndian.PutUint32(h[0:], RingMagic)
	binary.LittleEndian.PutUint16(h[4:], RingVersion)
	binary.LittleEndian.PutUint16(h[6:], RingHeaderLen)
	binary.LittleEndian.PutUint64(h[8:], uint64(l.RingID))
	binary.LittleEndian.PutUint64(h[16:], l.DataCapacity)
	return nil
}

func openCore(arena []byte, l RingLayout) (*ringCore, error) {
	if err := l.Validate(uint64(len(arena))); err != nil {
		return nil, err
	}
	h := arena[l.HeaderOffset : l.HeaderOffset+RingHeaderLen]
	fault := func(r RingFaultReason, format string, a ...any) error {
		return &RingFaultError{Ring: l.RingID, Reason: r, Detail: fmt.Sprintf(format, a...)}
	}
	if m := binary.LittleEndian.Uint32(h[0:]); m != RingMagic {
		return nil, fault(RingLayoutInvalid, "bad magic %#x", m)
	}
	if v := binary.LittleEndian.Uint16(h[4:]); v != RingVersion {
		return nil, fault(UnsupportedRingVersion, "version %d, want %d", v, RingVersion)
	}
	if n := binary.LittleEndian.Uint16(h[6:]); n != RingHeaderLen {
		return nil, fault(RingLayoutInvalid, "header_len %d, want %d", n, RingHeaderLen)
	}
	if id := binary.LittleEndian.Uint64(h[8:]); id != uint64(l.RingID) {
		return nil, fault(RingLayoutInvalid, "header names ring %d", id)
	}
	if c := binary.LittleEndian.Uint64(h[16:]); c != l.DataCapacity {
		return nil, fault(RingLayoutInvalid, "header capacity %d, layout %d", c, l.DataCapacity)
	}
	rc := &ringCore{
		id:       l.RingID,
		capacity: l.DataCapacity,
		data:     arena[l.DataOffset : l.DataOffset+l.DataCapacity : l.DataOffset+l.DataCapacity],
		commit:   (*atomic.Uint64)(unsafe.Pointer(&h[offCommit])),
		consume:  (*atomic.Uint64)(unsafe.Pointer(&h[offConsume])),
		state:    (*atomic.Uint32)(unsafe.Pointer(&h[offState])),
		wake:     (*atomic.Uint32)(unsafe.Pointer(&h[offWake])),
	}
	if err := rc.checkCursors(rc.commit.Load(), rc.consume.Load()); err != nil {
		return nil, err
	}
	return rc, nil
}

// checkCursors rejects cursors that a faulty or hostile peer could have
// written: the readable interval must lie within one capacity.
func (rc *ringCore) checkCursors(commit, consume uint64) error {
	if consume > commit || commit-consume > rc.capacity {
		rc.state.Or(stateFaulted)
		return &RingFaultError{Ring: rc.id, Reason: RingStateInvalid,
			Detail: fmt.Sprintf("commit %d consume %d capacity %d", commit, consume, rc.capacity)}
	}
	return nil
}

// NewRingLayout places a ring with dataCapacity bytes at arenaOffset: the
// header first, the data region after it, both RingAlignment-aligned.
func NewRingLayout(id RingID, arenaOffset, dataCapacity uint64) RingLayout {
	return RingLayout{
		RingID:       id,
		ArenaOffset:  arenaOffset,
		TotalLen:     RingFootprint(dataCapacity),
		HeaderOffset: arenaOffset,
		DataOffset:   arenaOffset + RingHeaderLen,
		DataCapacity: dataCapacity,
		Alignment:    RingAlignment,
	}
}

// RingFootprint is the arena bytes a ring of dataCapacity occupies.
func RingFootprint(dataCapacity uint64) uint64 {
	return alignUp(RingHeaderLen+dataCapacity, RingAlignment)
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }
