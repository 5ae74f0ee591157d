package eventlog

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// checkCrashed opens a crashed filesystem and checks that the log holds a
// prefix of what was appended (through appended) that includes everything
// durable (through durable), and that it works afterwards.
func checkCrashed(t *testing.T, c *vfs.MemFS, durable, appended uint64) {
	t.Helper()
	l, err := Open("/log", Options{FS: c})
	if err != nil {
		t.Fatalf("Open after crash: %v", err)
	}
	defer l.Close()
	last := l.LastIndex()
	if last < durable || last > appended {
		t.Fatalf("after crash LastIndex %d, want within [%d, %d]", last, durable, appended)
	}
	if last > 0 {
		mustReadAll(t, l, 1, last)
	}
	if err := l.Append(last+1, payloadFor(last+1)); err != nil {
		t.Fatalf("append after crash: %v", err)
	}
	if l.Status().Degraded {
		t.Fatalf("degraded after crash: %v", l.Status().Cause)
	}
	if loss := l.Status().Recovery.Loss; loss != nil {
		t.Fatalf("a crash (a torn tail) was taken for lost history: %v", loss)
	}
}

// TestCrashAfterEveryAppend crashes the log after every append, keeping a
// random part of the unsynced data each time (torn tails included), across
// rotations.
func TestCrashAfterEveryAppend(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 42))
			m := vfs.NewMemFS()
			l := openLog(t, "/log", Options{FS: m, Sync: SyncManual, RotateBytes: 700})
			var durable uint64
			for i := uint64(1); i <= 120; i++ {
				appendRange(t, l, i, i)
				if rng.IntN(4) == 0 {
					if err := l.Sync(); err != nil {
						t.Fatal(err)
					}
					durable = i
				}
				if l.Status().LiveBytes == headerLen {
					durable = i // a rotation just archived everything, durably
				}
				checkCrashed(t, m.CrashKeep(func(extra int) int { return rng.IntN(extra + 1) }), durable, i)
				checkCrashed(t, m.Crash(), durable, i)
			}
		})
	}
}

// TestCrashAtEveryWriteFailure stops the disk after n bytes for many n, so
// the failure lands in every phase (record, archive, new live file, directory
// sync), then crashes: every record fsynced before the failure must survive.
func TestCrashAtEveryWriteFailure(t *testing.T) {
	for n := int64(0); n < 3000; n += 23 {
		m := vfs.NewMemFS()
		l, err := Open("/log", Options{FS: m, RotateBytes: 600})
		if err != nil {
			t.Fatal(err)
		}
		m.SetWriteHook(vfs.FailAfter(n, syscall.EIO))
		for i := uint64(1); i <= 80; i++ {
			if err := l.Append(i, payloadFor(i)); err != nil {
				t.Fatal(err)
			}
		}
		written := l.Status().WrittenIndex
		l.Close()
		t.Run(fmt.Sprint("bytes", n), func(t *testing.T) {
			checkCrashed(t, m.Crash(), written, written)
		})
	}
}
