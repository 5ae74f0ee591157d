package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// TestReset installs a snapshot ahead of a log with archives, checks the
// log continues from it, and that a crash after every file operation of the
// reset leaves a log that opens consistently.
func TestReset(t *testing.T) {
	fsys := vfs.NewMemFS()
	opts := Options{FS: fsys, RotateBytes: 512, FreeSpaceFloor: NoFloor}
	l, err := Open("/log", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 60; i++ {
		if err := l.Append(i, []byte(fmt.Sprintf("old-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if l.Status().Archives == 0 {
		t.Fatal("the test wants archives to exist before the reset")
	}
	if err := l.Reset(500, []byte("master state at 500")); err != nil {
		t.Fatal(err)
	}
	if got := l.LastIndex(); got != 500 {
		t.Fatalf("LastIndex after reset %d", got)
	}
	if err := l.Append(61, []byte("x")); err == nil {
		t.Fatal("an index from the old history was accepted")
	}
	for i := uint64(501); i <= 505; i++ {
		if err := l.Append(i, []byte(fmt.Sprintf("new-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	l, err = Open("/log", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	idx, blob, err := l.LoadSnapshot()
	if err != nil || idx != 500 || !bytes.Equal(blob, []byte("master state at 500")) {
		t.Fatalf("snapshot after reopen: %d %q %v", idx, blob, err)
	}
	if _, err := l.Iterate(1); !errors.Is(err, ErrCompacted) {
		t.Fatalf("old history still readable: %v", err)
	}
	it, err := l.Iterate(501)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it.Next() {
		got = append(got, string(it.Payload()))
	}
	it.Close()
	if len(got) != 5 || got[0] != "new-501" || l.LastIndex() != 505 {
		t.Fatalf("after reopen: %v, last %d", got, l.LastIndex())
	}
}

func TestResetCrashSafety(t *testing.T) {
	for cut := 0; cut < 64; cut++ {
		fsys := vfs.NewMemFS()
		opts := Options{FS: fsys, RotateBytes: 512, FreeSpaceFloor: NoFloor}
		l, err := Open("/log", opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := uint64(1); i <= 40; i++ {
			l.Append(i, []byte(fmt.Sprintf("old-%d", i)))
		}
		// Fail every write after cut bytes, then crash the disk.
		fsys.SetWriteHook(vfs.FailAfter(int64(cut), errors.New("injected failure")))
		l.Reset(300, []byte("snap"))
		l.Close()
		crashed := fsys.Crash()
		crashed.SetWriteHook(nil)
		l2, err := Open("/log", Options{FS: crashed, RotateBytes: 512, FreeSpaceFloor: NoFloor})
		if err != nil {
			t.Fatalf("cut %d: reopen: %v", cut, err)
		}
		last := l2.LastIndex()
		if last != 300 && last > 40 {
			t.Fatalf("cut %d: last index %d is neither the old history nor the reset", cut, last)
		}
		if err := l2.Append(last+1, []byte("next")); err != nil {
			t.Fatalf("cut %d: append after reopen: %v", cut, err)
		}
		l2.Close()
	}
}
