//go:build linux

package eventlog

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDegradedOnFullTmpfs fills a real 1 MiB tmpfs.
func TestDegradedOnFullTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("mounting a tmpfs needs root (euid %d)", os.Geteuid())
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount -t tmpfs -o size=1m: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	t.Run("floor", func(t *testing.T) {
		// 1 MiB free is under the default 2 GiB floor: degraded at Open.
		rec := &degradeRecorder{}
		l := openLog(t, dir+"/floor", Options{OnDegraded: rec.hook})
		checkDegraded(t, l, rec, 5, ErrLowSpace)
		l.Close()
	})
	t.Run("enospc", func(t *testing.T) {
		rec := &degradeRecorder{}
		opts := Options{FreeSpaceFloor: NoFloor, Sync: SyncManual, OnDegraded: rec.hook}
		l := openLog(t, dir+"/full", opts)
		payload := make([]byte, 4096)
		var i uint64
		for i = 1; !l.Status().Degraded && i < 1000; i++ {
			if err := l.Append(i, payload); err != nil {
				t.Fatal(err)
			}
		}
		if !errors.Is(l.Status().Cause, syscall.ENOSPC) {
			t.Fatalf("after %d appends of 4 KiB: %+v", i, l.Status())
		}
		written := l.Status().WrittenIndex
		for ; i <= 1100; i++ {
			if err := l.Append(i, payload); err != nil {
				t.Fatal(err)
			}
		}
		if len(rec.calls) != 1 || l.LastIndex() != 1100 {
			t.Fatalf("%d signals, LastIndex %d", len(rec.calls), l.LastIndex())
		}
		l.Close()
		l = openLog(t, dir+"/full", opts)
		if l.LastIndex() != written {
			t.Fatalf("reopened at %d, want %d", l.LastIndex(), written)
		}
		it, err := l.Iterate(1)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		var n uint64
		for it.Next() {
			n++
		}
		if it.Err() != nil || n != written {
			t.Fatalf("read %d records (%v), want %d", n, it.Err(), written)
		}
	})
}
