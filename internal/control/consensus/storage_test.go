package consensus

import (
	"bytes"
	"errors"
	"testing"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/skulk/skulk/internal/control/eventlog"
)

func openLog(t *testing.T, dir string) *eventlog.Log {
	t.Helper()
	l, err := eventlog.Open(dir, eventlog.Options{FreeSpaceFloor: eventlog.NoFloor, Sync: eventlog.SyncManual})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func entry(index, term uint64, data string) *pb.Entry {
	return &pb.Entry{Index: proto.Uint64(index), Term: proto.Uint64(term), Type: pb.EntryNormal.Enum(), Data: []byte(data)}
}

func hard(term, vote, commit uint64) *pb.HardState {
	return &pb.HardState{Term: proto.Uint64(term), Vote: proto.Uint64(vote), Commit: proto.Uint64(commit)}
}

// contents lists the entries the memory storage holds.
func contents(t *testing.T, d *disk) []string {
	t.Helper()
	first, _ := d.mem.FirstIndex()
	last, _ := d.mem.LastIndex()
	if last < first {
		return nil
	}
	ents, err := d.mem.Entries(first, last+1, ^uint64(0))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, string(e.GetData()))
	}
	return out
}

// TestDiskReopens: what save keeps (entries, a tail that a later term
// overwrote, the hard state, a compaction snapshot with the entries after
// it) is what a reopened log gives raft back.
func TestDiskReopens(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	d, err := openDisk(l)
	if err != nil {
		t.Fatal(err)
	}
	steps := []raft.Ready{
		{Entries: []*pb.Entry{entry(1, 1, "a"), entry(2, 1, "b"), entry(3, 1, "c")}, HardState: hard(1, 7, 1), MustSync: true},
		// A new leader's entries replace the uncommitted tail from 3 on.
		{Entries: []*pb.Entry{entry(3, 2, "C"), entry(4, 2, "D")}, HardState: hard(2, 9, 3), MustSync: true},
	}
	for _, rd := range steps {
		if err := d.save(rd); err != nil {
			t.Fatal(err)
		}
	}
	if got := contents(t, d); !equal(got, []string{"a", "b", "C", "D"}) {
		t.Fatalf("in memory %v", got)
	}
	if err := d.compact(2, &pb.ConfState{Voters: []uint64{7}}, []byte("state at 2")); err != nil {
		t.Fatal(err)
	}
	if err := d.save(raft.Ready{Entries: []*pb.Entry{entry(5, 2, "E")}, HardState: hard(2, 9, 5), MustSync: true}); err != nil {
		t.Fatal(err)
	}
	l.Close()

	d2, err := openDisk(openLog(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(t, d2); !equal(got, []string{"C", "D", "E"}) {
		t.Fatalf("after reopening: %v", got)
	}
	snap, _ := d2.mem.Snapshot()
	if snap.GetMetadata().GetIndex() != 2 || !bytes.Equal(snap.GetData(), []byte("state at 2")) || snap.GetMetadata().GetConfState().GetVoters()[0] != 7 {
		t.Fatalf("snapshot %v", snap)
	}
	hs, _, _ := d2.mem.InitialState()
	if hs.GetTerm() != 2 || hs.GetVote() != 9 || hs.GetCommit() != 5 {
		t.Fatalf("hard state %v", hs)
	}
}

// TestDiskInstallsLeaderSnapshot: a snapshot from the leader replaces the
// whole log, also after a reopen.
func TestDiskInstallsLeaderSnapshot(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	d, _ := openDisk(l)
	if err := d.save(raft.Ready{Entries: []*pb.Entry{entry(1, 1, "old")}, HardState: hard(1, 0, 0), MustSync: true}); err != nil {
		t.Fatal(err)
	}
	snap := &pb.Snapshot{Data: []byte("leader's"), Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(40), Term: proto.Uint64(3),
		ConfState: &pb.ConfState{Voters: []uint64{1, 2, 3}}}}
	if err := d.save(raft.Ready{Snapshot: snap, HardState: hard(3, 0, 40), MustSync: true}); err != nil {
		t.Fatal(err)
	}
	if err := d.save(raft.Ready{Entries: []*pb.Entry{entry(41, 3, "next")}, HardState: hard(3, 0, 41), MustSync: true}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	d2, err := openDisk(openLog(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(t, d2); !equal(got, []string{"next"}) {
		t.Fatalf("entries %v", got)
	}
	if s, _ := d2.mem.Snapshot(); s.GetMetadata().GetIndex() != 40 || string(s.GetData()) != "leader's" {
		t.Fatalf("snapshot %v", s)
	}
}

func TestReadMessageBounds(t *testing.T) {
	var buf bytes.Buffer
	m := &pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(1), To: proto.Uint64(2), Term: proto.Uint64(3)}
	if err := WriteMessage(&buf, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMessage(&buf)
	if err != nil || got.GetFrom() != 1 || got.GetTerm() != 3 {
		t.Fatalf("round trip: %v %v", got, err)
	}
	huge := []byte{0xff, 0xff, 0xff, 0xff}
	if _, err := ReadMessage(bytes.NewReader(huge)); !errors.Is(err, ErrMessage) {
		t.Fatalf("a 4 GiB length: %v", err)
	}
	bad := append([]byte{0, 0, 0, 3}, 0xff, 0xff, 0xff)
	if _, err := ReadMessage(bytes.NewReader(bad)); !errors.Is(err, ErrMessage) {
		t.Fatalf("garbage: %v", err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
