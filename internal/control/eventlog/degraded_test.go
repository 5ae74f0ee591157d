package eventlog

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// degradeRecorder counts OnDegraded calls.
type degradeRecorder struct {
	calls []Status
}

func (r *degradeRecorder) hook(s Status) { r.calls = append(r.calls, s) }

// checkDegraded drives a log into counting-only mode by appending up to
// index to, and checks the contract: one signal, indices still advance,
// nothing more written, reads stop with ErrNotWritten.
func checkDegraded(t *testing.T, l *Log, rec *degradeRecorder, to uint64, cause error) uint64 {
	t.Helper()
	appendRange(t, l, l.LastIndex()+1, to)
	if len(rec.calls) != 1 {
		t.Fatalf("OnDegraded called %d times, want once", len(rec.calls))
	}
	st := l.Status()
	if !st.Degraded || !errors.Is(st.Cause, cause) || !errors.Is(rec.calls[0].Cause, cause) {
		t.Fatalf("status %+v, want degraded by %v", st, cause)
	}
	if st.LastIndex != to || st.WrittenIndex >= to || st.DegradedAt != st.WrittenIndex+1 {
		t.Fatalf("status %+v after appending through %d", st, to)
	}
	live := st.LiveBytes
	appendRange(t, l, to+1, to+10)
	if l.Status().LiveBytes != live || l.Status().WrittenIndex != st.WrittenIndex {
		t.Fatal("a degraded log kept writing")
	}
	if len(rec.calls) != 1 {
		t.Fatalf("OnDegraded called again: %d calls", len(rec.calls))
	}
	if err := l.Append(to+12, nil); err == nil {
		t.Fatal("a gap was accepted in degraded mode")
	}
	got, err := readFrom(t, l, st.FirstIndex)
	if !errors.Is(err, ErrNotWritten) || got != st.WrittenIndex {
		t.Fatalf("read stopped at %d with %v; want %d, ErrNotWritten", got, err, st.WrittenIndex)
	}
	if err := l.SaveSnapshot(1, nil); !errors.Is(err, ErrDegraded) {
		t.Fatalf("SaveSnapshot while degraded = %v", err)
	}
	if err := l.Sync(); err != nil {
		t.Fatalf("Sync while degraded = %v", err)
	}
	return st.WrittenIndex
}

func TestDegradedOnWriteError(t *testing.T) {
	tests := []struct {
		name  string
		limit int64 // bytes the disk takes after Open
		sync  SyncPolicy
	}{
		{"torn_record", 500, SyncEveryAppend},
		{"at_boundary", 0, SyncEveryAppend},
		{"during_rotation", 1100, SyncManual}, // rotation at 1024 bytes writes the archive
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vfs.NewMemFS()
			rec := &degradeRecorder{}
			opts := Options{FS: m, Sync: tt.sync, RotateBytes: 1024, OnDegraded: rec.hook}
			l := openLog(t, "/log", opts)
			m.SetWriteHook(vfs.FailAfter(tt.limit, syscall.ENOSPC))
			written := checkDegraded(t, l, rec, 100, syscall.ENOSPC)
			l.Close()
			// The disk has room again: reopening recovers what was written.
			m.SetWriteHook(nil)
			l = openLog(t, "/log", Options{FS: m})
			if l.LastIndex() != written || l.Status().Degraded {
				t.Fatalf("reopened: %+v, want LastIndex %d", l.Status(), written)
			}
			mustReadAll(t, l, 1, written)
			appendRange(t, l, written+1, written+5)
			mustReadAll(t, l, 1, written+5)
		})
	}
}

func TestDegradedOnLowSpace(t *testing.T) {
	t.Run("at_open", func(t *testing.T) {
		m := vfs.NewMemFS()
		m.SetFreeBytes(DefaultFreeSpaceFloor - 1)
		rec := &degradeRecorder{}
		l := openLog(t, "/log", Options{FS: m, OnDegraded: rec.hook})
		var ls *LowSpaceError
		if !errors.As(l.Status().Cause, &ls) || ls.Floor != DefaultFreeSpaceFloor || ls.Free != DefaultFreeSpaceFloor-1 {
			t.Fatalf("cause = %v", l.Status().Cause)
		}
		checkDegraded(t, l, rec, 10, ErrLowSpace)
	})
	t.Run("checked_every_n_appends", func(t *testing.T) {
		m := vfs.NewMemFS()
		rec := &degradeRecorder{}
		l := openLog(t, "/log", Options{FS: m, FreeSpaceCheckEvery: 16, OnDegraded: rec.hook})
		appendRange(t, l, 1, 3)
		m.SetFreeBytes(1 << 20)
		appendRange(t, l, 4, 15)
		if l.Status().Degraded {
			t.Fatal("degraded before the check was due")
		}
		appendRange(t, l, 16, 16) // the 16th append since Open reads the free space
		if st := l.Status(); !st.Degraded || st.WrittenIndex != 15 || st.DegradedAt != 16 {
			t.Fatalf("status = %+v", st)
		}
		checkDegraded(t, l, rec, 30, ErrLowSpace)
	})
	t.Run("no_floor", func(t *testing.T) {
		m := vfs.NewMemFS()
		m.SetFreeBytes(0)
		l := openLog(t, "/log", Options{FS: m, FreeSpaceFloor: NoFloor, FreeSpaceCheckEvery: 1})
		appendRange(t, l, 1, 5)
		if l.Status().Degraded {
			t.Fatal("degraded with the floor off")
		}
	})
}

func TestFloorFor(t *testing.T) {
	tests := []struct {
		name  string
		total uint64
		want  uint64
	}{
		{"unknown", 0, DefaultFreeSpaceFloor},
		{"tiny", 1 << 20, (1 << 20) / 20},
		{"10GiB", 10 << 30, 512 << 20},
		{"40GiB", 40 << 30, DefaultFreeSpaceFloor},
		{"1TiB", 1 << 40, DefaultFreeSpaceFloor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FloorFor(tt.total); got != tt.want {
				t.Fatalf("FloorFor(%d) = %d, want %d", tt.total, got, tt.want)
			}
		})
	}
	m := vfs.NewMemFS()
	m.SetTotalBytes(10 << 30)
	if got := openLog(t, "/log", Options{FS: m}).Status().Floor; got != 512<<20 {
		t.Fatalf("Open on a 10 GiB disk: floor %d", got)
	}
}

// TestHeal degrades a log for want of space (a reading under the floor, a
// write that failed with ENOSPC), checks that Heal waits for room, then
// resumes from the owner's snapshot with every index counted meanwhile
// held by it; and that other faults are left for a reopen.
func TestHeal(t *testing.T) {
	room := func(m *vfs.MemFS) {
		m.SetWriteHook(nil)
		m.SetFreeBytes(vfs.DefaultMemFreeBytes)
	}
	tests := []struct {
		name    string
		floor   int64
		degrade func(m *vfs.MemFS)
		room    func(m *vfs.MemFS)
		heals   bool
	}{
		{"low_space", DefaultFreeSpaceFloor, func(m *vfs.MemFS) { m.SetFreeBytes(1 << 20) }, room, true},
		{"enospc", NoFloor, func(m *vfs.MemFS) {
			m.SetWriteHook(vfs.FailAfter(100, syscall.ENOSPC))
			m.SetFreeBytes(0)
		}, room, true},
		{"eio", NoFloor, func(m *vfs.MemFS) { m.SetWriteHook(vfs.FailAfter(100, syscall.EIO)) }, room, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vfs.NewMemFS()
			var changes []Status
			opts := Options{FS: m, FreeSpaceFloor: tt.floor, FreeSpaceCheckEvery: 1 << 20, OnChange: func(s Status) { changes = append(changes, s) }}
			l := openLog(t, "/log", opts)
			appendRange(t, l, 1, 10)
			tt.degrade(m)
			snap := func() ([]byte, error) { return []byte(fmt.Sprintf("state at %d", l.LastIndex())), nil }
			noSnap := func() ([]byte, error) { t.Fatal("snapshot taken without room"); return nil, nil }
			if err := l.Heal(noSnap); err != nil {
				t.Fatal(err)
			}
			appendRange(t, l, 11, 20)
			if st := l.Status(); !st.Degraded || st.LastIndex != 20 || len(changes) != 1 || !changes[0].Degraded {
				t.Fatalf("status %+v, %d changes; want degraded and counting", st, len(changes))
			}
			if err := l.Heal(noSnap); err != nil {
				t.Fatal(err)
			}
			tt.room(m)
			if err := l.Heal(snap); err != nil {
				t.Fatal(err)
			}
			if l.Status().Degraded == tt.heals {
				t.Fatalf("after Heal with room: %+v, want healed %v", l.Status(), tt.heals)
			}
			if !tt.heals {
				return
			}
			if len(changes) != 2 || changes[1].Degraded {
				t.Fatalf("changes %+v, want degraded then healed", changes)
			}
			appendRange(t, l, 21, 25)
			l.Close()
			l = openLog(t, "/log", Options{FS: m, FreeSpaceFloor: tt.floor})
			if idx, blob, err := l.LoadSnapshot(); err != nil || idx != 20 || string(blob) != "state at 20" {
				t.Fatalf("snapshot %d %q %v", idx, blob, err)
			}
			if l.LastIndex() != 25 || l.Status().FirstIndex != 21 {
				t.Fatalf("reopened %+v", l.Status())
			}
			mustReadAll(t, l, 21, 25)
		})
	}
}
