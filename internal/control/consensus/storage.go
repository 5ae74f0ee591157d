package consensus

import (
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/skulk/skulk/internal/control/eventlog"
)

// Record tags: the first byte of each eventlog record's payload.
const (
	tagEntry = 'E' // a raftpb.Entry
	tagHard  = 'H' // a raftpb.HardState
)

// disk is the Raft log on the node's event log: raft's MemoryStorage in
// front (what raft reads), the eventlog behind it (what survives a
// restart). Records are numbered by the eventlog's own sequence; an entry
// whose Raft index is at or below one already written supersedes it and
// everything after it, as etcd's WAL does. Only the owner goroutine calls it.
type disk struct {
	log *eventlog.Log
	mem *raft.MemoryStorage
	buf []byte
}

// snapshotBlob is an eventlog snapshot: raft's snapshot (the State and
// the configuration), the hard state when it was taken, and the entries
// after the snapshot index, so that replay from the next record is whole.
type snapshotBlob struct {
	Snap []byte   `cbor:"1,keyasint"`
	Hard []byte   `cbor:"2,keyasint"`
	Tail [][]byte `cbor:"3,keyasint"`
}

// ErrDamaged reports a Raft record that cannot be read.
var ErrDamaged = errors.New("consensus: damaged raft record")

// openDisk restores raft's storage from the event log.
func openDisk(l *eventlog.Log) (*disk, error) {
	d := &disk{log: l, mem: raft.NewMemoryStorage()}
	seq, blob, err := l.LoadSnapshot()
	switch {
	case errors.Is(err, eventlog.ErrNoSnapshot):
		seq = 0
	case err != nil:
		return nil, fmt.Errorf("consensus: load snapshot: %w", err)
	default:
		if err := d.restoreBlob(blob); err != nil {
			return nil, err
		}
	}
	it, err := l.Iterate(seq + 1)
	if err != nil {
		return nil, fmt.Errorf("consensus: read the log after record %d: %w", seq, err)
	}
	defer it.Close()
	for it.Next() {
		if err := d.replay(it.Payload()); err != nil {
			return nil, fmt.Errorf("record %d: %w", it.Index(), err)
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("consensus: read the log: %w", err)
	}
	return d, nil
}

func (d *disk) restoreBlob(blob []byte) error {
	var sb snapshotBlob
	if err := cbor.Unmarshal(blob, &sb); err != nil {
		return fmt.Errorf("%w: snapshot: %v", ErrDamaged, err)
	}
	snap := &pb.Snapshot{}
	if err := proto.Unmarshal(sb.Snap, snap); err != nil {
		return fmt.Errorf("%w: snapshot: %v", ErrDamaged, err)
	}
	if !raft.IsEmptySnap(snap) {
		if err := d.mem.ApplySnapshot(snap); err != nil {
			return fmt.Errorf("consensus: apply snapshot: %w", err)
		}
	}
	hs := &pb.HardState{}
	if err := proto.Unmarshal(sb.Hard, hs); err != nil {
		return fmt.Errorf("%w: hard state: %v", ErrDamaged, err)
	}
	if err := d.mem.SetHardState(hs); err != nil {
		return err
	}
	for _, b := range sb.Tail {
		if err := d.replay(append([]byte{tagEntry}, b...)); err != nil {
			return err
		}
	}
	return nil
}

func (d *disk) replay(p []byte) error {
	if len(p) == 0 {
		return fmt.Errorf("%w: empty record", ErrDamaged)
	}
	switch p[0] {
	case tagEntry:
		e := &pb.Entry{}
		if err := proto.Unmarshal(p[1:], e); err != nil {
			return fmt.Errorf("%w: entry: %v", ErrDamaged, err)
		}
		return d.appendMem([]*pb.Entry{e})
	case tagHard:
		hs := &pb.HardState{}
		if err := proto.Unmarshal(p[1:], hs); err != nil {
			return fmt.Errorf("%w: hard state: %v", ErrDamaged, err)
		}
		return d.mem.SetHardState(hs)
	}
	return fmt.Errorf("%w: unknown tag %q", ErrDamaged, p[0])
}

// appendMem appends to the memory storage, dropping entries the snapshot
// already covers.
func (d *disk) appendMem(ents []*pb.Entry) error {
	first, _ := d.mem.FirstIndex()
	for len(ents) > 0 && ents[0].GetIndex() < first {
		ents = ents[1:]
	}
	if len(ents) == 0 {
		return nil
	}
	last, _ := d.mem.LastIndex()
	if ents[0].GetIndex() > last+1 {
		return fmt.Errorf("%w: entry %d after last %d", ErrDamaged, ents[0].GetIndex(), last)
	}
	return d.mem.Append(ents)
}

// save makes a Ready's snapshot, entries and hard state durable, then
// visible to raft. Durable first: a message that follows may promise them.
func (d *disk) save(rd raft.Ready) error {
	if !raft.IsEmptySnap(rd.Snapshot) {
		hs := rd.HardState
		if raft.IsEmptyHardState(hs) {
			h, _, _ := d.mem.InitialState()
			hs = h
		}
		blob, err := encodeBlob(rd.Snapshot, hs, nil)
		if err != nil {
			return err
		}
		if err := d.log.Reset(d.log.LastIndex()+1, blob); err != nil {
			return fmt.Errorf("consensus: install snapshot: %w", err)
		}
		if err := d.mem.ApplySnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	for _, e := range rd.Entries {
		if err := d.write(tagEntry, e); err != nil {
			return err
		}
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := d.write(tagHard, rd.HardState); err != nil {
			return err
		}
	}
	if rd.MustSync {
		if err := d.log.Sync(); err != nil {
			return err
		}
	}
	if err := d.degraded(); err != nil {
		return err
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := d.mem.SetHardState(rd.HardState); err != nil {
			return err
		}
	}
	return d.appendMem(rd.Entries)
}

// ErrNotDurable says the disk log stopped writing (full disk, write error):
// this node takes no part in consensus until it writes again.
var ErrNotDurable = errors.New("consensus: the raft log is not writing")

func (d *disk) degraded() error {
	if st := d.log.Status(); st.Degraded {
		return fmt.Errorf("%w: %s", ErrNotDurable, st.Cause)
	}
	return nil
}

func (d *disk) write(tag byte, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	d.buf = append(append(d.buf[:0], tag), b...)
	return d.log.Append(d.log.LastIndex()+1, d.buf)
}

// compact stores a snapshot of the applied data at index and lets raft
// forget the entries before it.
func (d *disk) compact(index uint64, cs *pb.ConfState, data []byte) error {
	snap, err := d.mem.CreateSnapshot(index, cs, data)
	if err != nil {
		return err
	}
	hs, _, _ := d.mem.InitialState()
	last, _ := d.mem.LastIndex()
	var tail []*pb.Entry
	if last > index {
		if tail, err = d.mem.Entries(index+1, last+1, ^uint64(0)); err != nil {
			return err
		}
	}
	blob, err := encodeBlob(snap, hs, tail)
	if err != nil {
		return err
	}
	if err := d.log.SaveSnapshot(d.log.LastIndex(), blob); err != nil {
		return err
	}
	return d.mem.Compact(index)
}

// rewrite replaces the whole log by a snapshot (recovery, upgrade).
func (d *disk) rewrite(snap *pb.Snapshot, hs *pb.HardState, tail []*pb.Entry) error {
	blob, err := encodeBlob(snap, hs, tail)
	if err != nil {
		return err
	}
	if err := d.log.Reset(d.log.LastIndex()+1, blob); err != nil {
		return err
	}
	d.mem = raft.NewMemoryStorage()
	if err := d.mem.ApplySnapshot(snap); err != nil {
		return err
	}
	if err := d.mem.SetHardState(hs); err != nil {
		return err
	}
	return d.appendMem(tail)
}

// blob is a snapshot of raft's whole storage, for a log resuming after a
// degraded spell (eventlog.Log.Heal).
func (d *disk) blob() ([]byte, error) {
	snap, err := d.mem.Snapshot()
	if err != nil {
		return nil, err
	}
	hs, _, _ := d.mem.InitialState()
	first, _ := d.mem.FirstIndex()
	last, _ := d.mem.LastIndex()
	var tail []*pb.Entry
	if last >= first {
		if tail, err = d.mem.Entries(first, last+1, ^uint64(0)); err != nil {
			return nil, err
		}
	}
	return encodeBlob(snap, hs, tail)
}

func encodeBlob(snap *pb.Snapshot, hs *pb.HardState, tail []*pb.Entry) ([]byte, error) {
	var sb snapshotBlob
	var err error
	if sb.Snap, err = proto.Marshal(snap); err != nil {
		return nil, err
	}
	if sb.Hard, err = proto.Marshal(hs); err != nil {
		return nil, err
	}
	for _, e := range tail {
		b, err := proto.Marshal(e)
		if err != nil {
			return nil, err
		}
		sb.Tail = append(sb.Tail, b)
	}
	return cbor.Marshal(sb)
}
