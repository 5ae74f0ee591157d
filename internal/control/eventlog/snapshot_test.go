package eventlog

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/platform/vfs"
)

func TestSnapshotAndTail(t *testing.T) {
	for _, fc := range fsCases {
		t.Run(fc.name, func(t *testing.T) {
			fsys, dir := fc.make(t)
			opts := Options{FS: fsys, RotateBytes: 512, Sync: SyncManual}
			l := openLog(t, dir, opts)
			if _, _, err := l.LoadSnapshot(); !errors.Is(err, ErrNoSnapshot) {
				t.Fatalf("LoadSnapshot on a fresh log = %v", err)
			}
			appendRange(t, l, 1, 300)
			if err := l.SaveSnapshot(301, nil); !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("snapshot past the end = %v", err)
			}
			blob := []byte("state at 250")
			if err := l.SaveSnapshot(250, blob); err != nil {
				t.Fatal(err)
			}
			before := l.Status()
			if err := l.Compact(); err != nil {
				t.Fatal(err)
			}
			st := l.Status()
			if st.FirstIndex <= 1 || st.FirstIndex > 251 || st.Archives >= before.Archives {
				t.Fatalf("after Compact: %+v (before %+v)", st, before)
			}
			// Recovery of a reader: compacted, so load the snapshot and
			// replay the tail after it.
			if _, err := l.Iterate(1); !errors.Is(err, ErrCompacted) {
				t.Fatalf("Iterate(1) after Compact = %v", err)
			}
			idx, got, err := l.LoadSnapshot()
			if err != nil || idx != 250 || !bytes.Equal(got, blob) {
				t.Fatalf("LoadSnapshot = %d, %q, %v", idx, got, err)
			}
			mustReadAll(t, l, idx+1, 300)
			l.Close()
			l = openLog(t, dir, opts)
			if idx, got, err := l.LoadSnapshot(); err != nil || idx != 250 || !bytes.Equal(got, blob) {
				t.Fatalf("reopened LoadSnapshot = %d, %q, %v", idx, got, err)
			}
			if l.Status().FirstIndex != st.FirstIndex {
				t.Fatalf("reopened FirstIndex %d, want %d", l.Status().FirstIndex, st.FirstIndex)
			}
			mustReadAll(t, l, 251, 300)
		})
	}
}

func TestSnapshotRetentionAndCorruption(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	appendRange(t, l, 1, 30)
	for _, i := range []uint64{10, 20, 30} {
		if err := l.SaveSnapshot(i, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := (vfs.OS{}).Stat(filepath.Join(dir, snapshotName(10))); err == nil {
		t.Fatal("oldest snapshot not deleted")
	}
	if st := l.Status(); st.Snapshots != DefaultSnapshotsRetained {
		t.Fatalf("Snapshots = %d", st.Snapshots)
	}
	corrupt := func(i uint64) {
		name := filepath.Join(dir, snapshotName(i))
		b := readFile(t, vfs.OS{}, name)
		b[snapHeaderLen] ^= 1
		writeFile(t, vfs.OS{}, name, b)
	}
	corrupt(30)
	if idx, blob, err := l.LoadSnapshot(); err != nil || idx != 20 || blob[0] != 20 {
		t.Fatalf("with the newest corrupt: %d, %v, %v; want the older one", idx, blob, err)
	}
	corrupt(20)
	_, _, err := l.LoadSnapshot()
	if ce := asCorruption(t, err); ce.File != snapshotName(30) {
		t.Fatalf("error names %s, want the newest", ce.File)
	}
	// A truncated snapshot file is corrupt too, not a panic.
	writeFile(t, vfs.OS{}, filepath.Join(dir, snapshotName(30)), []byte("SKULKS"))
	if _, err := l.readSnapshot(30); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short snapshot: %v", err)
	}
}

func TestSnapshotSurvivesCrash(t *testing.T) {
	m := vfs.NewMemFS()
	l := openLog(t, "/log", Options{FS: m})
	appendRange(t, l, 1, 5)
	if err := l.SaveSnapshot(5, []byte("five")); err != nil {
		t.Fatal(err)
	}
	c := m.Crash()
	l2 := openLog(t, "/log", Options{FS: c})
	if idx, blob, err := l2.LoadSnapshot(); err != nil || idx != 5 || string(blob) != "five" {
		t.Fatalf("after crash: %d, %q, %v", idx, blob, err)
	}
	if l2.LastIndex() != 5 {
		t.Fatalf("LastIndex after crash = %d", l2.LastIndex())
	}
}
