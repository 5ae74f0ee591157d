//go:build linux

package eventlog

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/skulk/skulk/internal/platform/vfs"
	"github.com/skulk/skulk/internal/testkit"
)

// TestDegradedOnFullTmpfs fills a real 1 MiB tmpfs.
func TestDegradedOnFullTmpfs(t *testing.T) {
	dir := testkit.TmpFS(t, "1m")
	t.Run("floor", func(t *testing.T) {
		// 1 MiB free is under a 2 GiB floor: degraded at Open.
		rec := &degradeRecorder{}
		l := openLog(t, dir+"/floor", Options{FreeSpaceFloor: DefaultFreeSpaceFloor, OnDegraded: rec.hook})
		checkDegraded(t, l, rec, 5, ErrLowSpace)
		l.Close()
	})
	t.Run("auto_floor_and_heal", func(t *testing.T) {
		// The default floor of a 1 MiB disk is 5% of it; filling the disk
		// past it degrades the log at the next Heal, and emptying it
		// resumes writing with nothing counted in between lost.
		l := openLog(t, dir+"/heal", Options{})
		if st := l.Status(); st.Degraded || st.Floor != (1<<20)/FloorDivisor {
			t.Fatalf("status %+v, want writing with a floor of 5%% of 1 MiB", st)
		}
		appendRange(t, l, 1, 3)
		filler := dir + "/filler"
		fill(t, filler, l.Status().FreeBytes-l.Status().Floor/2)
		if err := l.Heal(nil); err != nil || !errors.Is(l.Status().Cause, ErrLowSpace) {
			t.Fatalf("Heal on a full disk: %v, status %+v", err, l.Status())
		}
		appendRange(t, l, 4, 8)
		if err := l.Heal(func() ([]byte, error) { t.Fatal("snapshot taken with the disk still full"); return nil, nil }); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		if err := l.Heal(func() ([]byte, error) { return []byte("state at 8"), nil }); err != nil || l.Status().Degraded {
			t.Fatalf("Heal with room again: %v, status %+v", err, l.Status())
		}
		appendRange(t, l, 9, 10)
		l.Close()
		l = openLog(t, dir+"/heal", Options{})
		if idx, blob, err := l.LoadSnapshot(); err != nil || idx != 8 || string(blob) != "state at 8" {
			t.Fatalf("snapshot %d %q %v", idx, blob, err)
		}
		mustReadAll(t, l, 9, 10)
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
		var ns *vfs.NoSpaceError
		if !errors.Is(l.Status().Cause, syscall.ENOSPC) || !errors.As(l.Status().Cause, &ns) || ns.Path != dir+"/full" ||
			ns.Free > 64<<10 || ns.What != "the event log" {
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

// fill writes a file of n bytes.
func fill(t *testing.T, name string, n uint64) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for n > 0 {
		k := min(n, uint64(len(buf)))
		if _, err := f.Write(buf[:k]); err != nil {
			t.Fatalf("fill %s: %v", name, err)
		}
		n -= k
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}
