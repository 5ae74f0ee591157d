package eventlog

import (
	"errors"
	"time"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// Defaults, from the seed: the log must never be what fills a node's disk.
const (
	// DefaultFreeSpaceFloor is the free space under which the log stops
	// writing, on a disk of 40 GiB or more; smaller disks get
	// FloorFor's share of their size.
	DefaultFreeSpaceFloor = 2 << 30
	// FloorDivisor makes a small disk's floor its size / FloorDivisor (5%),
	// so a 10 GiB disk is not declared full with 8 GiB free.
	FloorDivisor = 20
	// DefaultFreeSpaceCheckEvery is how many appends pass between free-space
	// readings.
	DefaultFreeSpaceCheckEvery = 1024
	// DefaultArchiveCapBytes caps the total size of the archives.
	DefaultArchiveCapBytes = 1 << 30
	// DefaultRotateBytes is the live-file size that triggers rotation.
	DefaultRotateBytes = 64 << 20
	// DefaultSnapshotsRetained is how many snapshots are kept, so a torn
	// newest one still leaves one to load.
	DefaultSnapshotsRetained = 2
	// NoFloor as Options.FreeSpaceFloor turns the free-space check off.
	NoFloor = -1
)

// SyncPolicy says when appended records are fsynced.
type SyncPolicy int

const (
	// SyncEveryAppend fsyncs each record before Append returns.
	SyncEveryAppend SyncPolicy = iota
	// SyncManual leaves fsync to explicit Sync calls (batching).
	SyncManual
)

// Options configure a Log. The zero value gives the defaults on the real
// filesystem.
type Options struct {
	// FS is the filesystem; nil means vfs.OS{}.
	FS vfs.FS
	// Sync is the fsync policy.
	Sync SyncPolicy
	// RotateBytes is the live-file size that triggers rotation; 0 means
	// DefaultRotateBytes.
	RotateBytes int64
	// ArchiveCapBytes caps the archives' total size; 0 means
	// DefaultArchiveCapBytes.
	ArchiveCapBytes int64
	// FreeSpaceFloor is the free space under which the log degrades; 0 means
	// FloorFor the size of the log's filesystem, and NoFloor disables the
	// check.
	FreeSpaceFloor int64
	// FreeSpaceCheckEvery is the number of appends between free-space
	// readings; 0 means DefaultFreeSpaceCheckEvery.
	FreeSpaceCheckEvery int
	// SnapshotsRetained is how many snapshots to keep; 0 means
	// DefaultSnapshotsRetained.
	SnapshotsRetained int
	// OnDegraded, if set, is called once, on the log's goroutine, when the
	// log enters counting-only mode (possibly during Open), so the owner can
	// log one line.
	OnDegraded func(Status)
	// OnChange, if set, is called on the log's goroutine whenever
	// Status().Degraded or Status().Recovery.Loss changes after Open (the
	// log degrades, Heal resumes writing, Reset or AcknowledgeLoss clears a
	// loss), so an owner that reports health elsewhere can copy them.
	OnChange func(Status)
	// Now names the copies of damaged files (default time.Now).
	Now func() time.Time
	// Name says what the log is in errors, such as a full disk's
	// (default "the event log").
	Name string
}

// FloorFor is the default free-space floor on a filesystem of total
// bytes: DefaultFreeSpaceFloor, or 5% of a smaller disk. An unknown size
// (0) gets DefaultFreeSpaceFloor.
func FloorFor(total uint64) uint64 {
	if total == 0 {
		return DefaultFreeSpaceFloor
	}
	return min(DefaultFreeSpaceFloor, total/FloorDivisor)
}

func (o Options) withDefaults() (Options, error) {
	if o.FS == nil {
		o.FS = vfs.OS{}
	}
	if o.RotateBytes == 0 {
		o.RotateBytes = DefaultRotateBytes
	}
	if o.ArchiveCapBytes == 0 {
		o.ArchiveCapBytes = DefaultArchiveCapBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Name == "" {
		o.Name = "the event log"
	}
	if o.FreeSpaceCheckEvery == 0 {
		o.FreeSpaceCheckEvery = DefaultFreeSpaceCheckEvery
	}
	if o.SnapshotsRetained == 0 {
		o.SnapshotsRetained = DefaultSnapshotsRetained
	}
	switch {
	case o.Sync != SyncEveryAppend && o.Sync != SyncManual:
		return o, errors.New("eventlog: unknown sync policy")
	case o.RotateBytes < headerLen:
		return o, errors.New("eventlog: RotateBytes must be at least the header size")
	case o.ArchiveCapBytes < 0:
		return o, errors.New("eventlog: negative ArchiveCapBytes")
	case o.FreeSpaceFloor < 0 && o.FreeSpaceFloor != NoFloor:
		return o, errors.New("eventlog: negative FreeSpaceFloor (use NoFloor)")
	case o.FreeSpaceCheckEvery < 0:
		return o, errors.New("eventlog: negative FreeSpaceCheckEvery")
	case o.SnapshotsRetained < 0:
		return o, errors.New("eventlog: negative SnapshotsRetained")
	}
	return o, nil
}
