package eventlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"github.com/skulk/skulk/internal/platform/vfs"
)

const (
	liveName = "events.bin"
	// sparseStride is how many live records one sparse-index entry covers:
	// a read from any index seeks to within this many records.
	sparseStride = 64
)

// Log is an open event log. It is not safe for concurrent use.
type Log struct {
	// immutable after Open
	fs   vfs.FS
	dir  string
	opts Options

	// the live file: nil only when degraded before it could be created
	live     vfs.File
	liveBase uint64  // index of the live file's first record
	liveSize int64   // bytes of whole records (and header) in the live file
	sparse   []int64 // sparse[k]: offset of record liveBase+k*sparseStride
	dirty    bool    // records written but not fsynced

	archives []archive // in index order
	nextSeq  uint64    // N of the next archive
	snaps    []uint64  // snapshot indices on disk, ascending

	last       uint64 // last index counted
	written    uint64 // last index written to disk
	floor      uint64 // free-space floor in force; 0: no floor
	free       uint64 // the last free-space reading; 0: none yet
	appends    int    // since the last free-space reading
	layout     uint64 // bumped whenever files are replaced; iterators re-seek
	cause      error  // why the log degraded; nil while healthy
	degradedAt uint64 // first index counted but not written
	recovery   Recovery
	closed     bool
	buf        []byte
	zdec       *zstd.Decoder // lazily made, reused for archive reads
}

// archive is one events.N.bin.zst file.
type archive struct {
	seq  uint64
	base uint64 // index of its first record
	size int64  // compressed bytes on disk
}

// Recovery reports what Open had to drop from the live file.
type Recovery struct {
	// Records is how many records of the live file were kept.
	Records uint64
	// DroppedBytes is how many bytes were cut from the live file's tail.
	DroppedBytes int64
	// Cause, when bytes were dropped, is the *CorruptionError that stopped
	// the scan (Torn for a write cut short).
	Cause error
	// LostArchives counts archives dropped from the history because they
	// (or a newer one) could not be read; ArchiveCause says why.
	LostArchives int
	ArchiveCause error
	// Loss, when set, says the log lost records it once held (a damaged
	// middle, not a torn tail): found by this Open or an earlier one and
	// not yet acknowledged or replaced by Reset.
	Loss *LossError
}

// Status is a snapshot of the log's state.
type Status struct {
	// FirstIndex is the oldest index still readable; LastIndex the newest
	// counted; WrittenIndex the newest written to disk. They differ only in
	// degraded mode.
	FirstIndex, LastIndex, WrittenIndex uint64
	// Degraded is set once the log stopped writing; Cause says why and
	// DegradedAt is the first index that was only counted.
	Degraded   bool
	Cause      error
	DegradedAt uint64
	// Floor is the free-space floor in force (0: none) and FreeBytes the
	// last reading of the disk's free space (0: none yet).
	Floor, FreeBytes uint64
	// LiveBytes is the live file's size, ArchiveBytes the archives' total.
	LiveBytes    int64
	Archives     int
	ArchiveBytes int64
	Snapshots    int
	Recovery     Recovery
}

// Open opens or creates the log in dir and recovers it (see the package
// doc). It fails on bad options and on files it cannot read. A damaged live
// file is not an error: its good part is kept, the file itself is kept
// aside, and Status().Recovery says what was lost. A write that fails
// while opening leaves the log degraded, not an error.
func Open(dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Log{fs: opts.FS, dir: dir, opts: opts, nextSeq: 1}
	if err := l.open(); err != nil {
		l.closeFiles()
		return nil, err
	}
	switch opts.FreeSpaceFloor {
	case NoFloor:
	case 0:
		total, _ := l.fs.TotalBytes(dir) // unknown: FloorFor(0), the fixed default
		l.floor = FloorFor(total)
	default:
		l.floor = uint64(opts.FreeSpaceFloor)
	}
	l.checkFree()
	return l, nil
}

// Append adds the record at index, which must be LastIndex()+1. A payload
// over MaxPayload is refused with ErrTooLarge and a wrong index with a
// *GapError; both leave the log unchanged. Write failures do not make Append
// fail: they degrade the log (see the package doc) and the index advances.
func (l *Log) Append(index uint64, payload []byte) error {
	switch {
	case l.closed:
		return ErrClosed
	case len(payload) > MaxPayload:
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(payload), MaxPayload)
	case index != l.last+1:
		return &GapError{Want: l.last + 1, Got: index}
	}
	l.last = index
	if l.cause != nil {
		return nil
	}
	l.appends++
	if l.appends >= l.opts.FreeSpaceCheckEvery {
		l.appends = 0
		if l.checkFree(); l.cause != nil {
			return nil
		}
	}
	l.buf = appendRecord(l.buf[:0], index, payload)
	if _, err := l.live.Write(l.buf); err != nil {
		// A partial record may now follow liveSize; readers stop at
		// liveSize and the next Open truncates it.
		l.degrade(fmt.Errorf("eventlog: append %d: %w", index, err))
		return nil
	}
	if (index-l.liveBase)%sparseStride == 0 {
		l.sparse = append(l.sparse, l.liveSize)
	}
	l.liveSize += int64(len(l.buf))
	l.written = index
	l.dirty = true
	if l.opts.Sync == SyncEveryAppend {
		l.Sync()
	}
	if l.cause == nil && l.liveSize >= l.opts.RotateBytes {
		if err := l.rotate(); err != nil {
			l.degrade(err)
		}
	}
	return nil
}

// Sync makes every written record durable. A failed fsync degrades the log
// rather than returning an error (after a failed fsync the kernel may have
// dropped the data, so retrying proves nothing); check Status.
func (l *Log) Sync() error {
	if l.closed {
		return ErrClosed
	}
	if l.cause != nil || !l.dirty {
		return nil
	}
	if err := l.live.Sync(); err != nil {
		l.degrade(fmt.Errorf("eventlog: fsync: %w", err))
		return nil
	}
	l.dirty = false
	return nil
}

// LastIndex is the index of the last record counted (0 for an empty log).
func (l *Log) LastIndex() uint64 { return l.last }

// Status reports the log's state.
func (l *Log) Status() Status {
	s := Status{
		FirstIndex:   l.firstIndex(),
		LastIndex:    l.last,
		WrittenIndex: l.written,
		Degraded:     l.cause != nil,
		Cause:        l.cause,
		DegradedAt:   l.degradedAt,
		Floor:        l.floor,
		FreeBytes:    l.free,
		LiveBytes:    l.liveSize,
		Archives:     len(l.archives),
		Snapshots:    len(l.snaps),
		Recovery:     l.recovery,
	}
	for _, a := range l.archives {
		s.ArchiveBytes += a.size
	}
	return s
}

// Close syncs and closes the log. Its error is the final fsync's, if that
// failed.
func (l *Log) Close() error {
	if l.closed {
		return ErrClosed
	}
	var err error
	if l.cause == nil && l.dirty {
		if err = l.live.Sync(); err != nil {
			err = fmt.Errorf("eventlog: fsync on close: %w", err)
		}
	}
	l.closeFiles()
	l.closed = true
	return err
}

func (l *Log) closeFiles() {
	if l.live != nil {
		l.live.Close()
		l.live = nil
	}
	if l.zdec != nil {
		l.zdec.Close()
		l.zdec = nil
	}
}

// firstIndex is the oldest index that can still be read.
func (l *Log) firstIndex() uint64 {
	if len(l.archives) > 0 {
		return l.archives[0].base
	}
	return l.liveBase
}

// degrade enters counting-only mode; only the first cause counts.
func (l *Log) degrade(cause error) {
	if l.cause != nil {
		return
	}
	l.readFree() // so Status says how full the disk is, whatever the cause
	if vfs.IsNoSpace(cause) {
		cause = &vfs.NoSpaceError{Path: l.dir, Free: l.free, What: l.opts.Name, Err: cause}
	}
	l.cause = cause
	l.degradedAt = l.written + 1
	if l.opts.OnDegraded != nil {
		l.opts.OnDegraded(l.Status())
	}
	l.notify()
}

// notify tells the owner that the degraded state or the loss changed.
func (l *Log) notify() {
	if l.opts.OnChange != nil {
		l.opts.OnChange(l.Status())
	}
}

// readFree reads the disk's free space; ok is false when statfs failed.
func (l *Log) readFree() (uint64, bool) {
	free, err := l.fs.FreeBytes(l.dir)
	if err != nil {
		return 0, false
	}
	l.free = free
	return free, true
}

// checkFree degrades the log when free space is under the floor.
func (l *Log) checkFree() {
	if l.floor == 0 || l.cause != nil {
		return
	}
	// A failed statfs says nothing about the disk filling up; a write that
	// fails will.
	if free, ok := l.readFree(); ok && free < l.floor {
		l.degrade(&LowSpaceError{Dir: l.dir, Free: free, Floor: l.floor})
	}
}

// healMargin is the room over the floor (or, with no floor, over nothing)
// that Heal wants before it resumes writing, so a disk hovering at the
// floor does not flap between the modes.
func (l *Log) healMargin() uint64 {
	if l.floor == 0 {
		return 1 << 20
	}
	return l.floor / 8
}

// Heal is the owner's periodic disk check (every few seconds; the check
// every FreeSpaceCheckEvery appends alone would take long to come on a
// quiet log). On a writing log it reads the free space and degrades the
// log when it is under the floor. On a log degraded for want of space
// (under the floor, or a write that failed with ENOSPC) whose disk has room
// again it leaves counting-only mode: the records only counted exist in
// the owner's memory alone, so Heal asks snapshot for the owner's state at
// LastIndex, stores it as the snapshot there, drops the older history (it
// has a hole) and starts a fresh live file after it. Heal returns an error
// only when it tried to resume and could not (the log is degraded again,
// with that cause); snapshot is not called otherwise.
func (l *Log) Heal(snapshot func() ([]byte, error)) error {
	switch {
	case l.closed:
		return ErrClosed
	case l.cause == nil:
		l.checkFree()
		return nil
	case !errors.Is(l.cause, ErrLowSpace) && !vfs.IsNoSpace(l.cause):
		return nil // another fault: reopening the log retries the disk
	}
	if free, ok := l.readFree(); !ok || free < l.floor+l.healMargin() {
		return nil
	}
	blob, err := snapshot()
	if err != nil {
		return fmt.Errorf("eventlog: heal: snapshot: %w", err)
	}
	was := l.cause
	l.cause = nil
	if err := l.reset(l.last, blob); err != nil {
		return fmt.Errorf("eventlog: heal (degraded by %v): %w", was, err)
	}
	l.degradedAt, l.appends = 0, 0
	l.notify()
	return nil
}

func (l *Log) path(name string) string { return filepath.Join(l.dir, name) }

// replaceFile atomically puts a file holding what write writes at name:
// temporary file, fsync, rename, fsync of the directory.
func (l *Log) replaceFile(name string, write func(f vfs.File) error) (int64, error) {
	tmp := l.path(name + ".tmp")
	f, err := l.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, fmt.Errorf("eventlog: create %s: %w", tmp, err)
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	var size int64
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			size = fi.Size()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.fs.Rename(tmp, l.path(name))
	}
	if err != nil {
		l.fs.Remove(tmp) // best effort; Open removes leftovers too
		return 0, fmt.Errorf("eventlog: write %s: %w", name, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return 0, fmt.Errorf("eventlog: sync dir for %s: %w", name, err)
	}
	return size, nil
}

// startLive atomically replaces the live file with an empty one whose first
// record will be base.
func (l *Log) startLive(base uint64) error {
	if _, err := l.replaceFile(liveName, func(f vfs.File) error {
		_, err := f.Write(appendHeader(nil, base))
		return err
	}); err != nil {
		return err
	}
	f, err := l.fs.OpenFile(l.path(liveName), os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("eventlog: open %s: %w", liveName, err)
	}
	if l.live != nil {
		l.live.Close()
	}
	l.live, l.liveBase, l.liveSize, l.sparse, l.dirty = f, base, headerLen, l.sparse[:0], false
	l.layout++
	return nil
}
