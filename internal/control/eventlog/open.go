package eventlog

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// open lists the directory, recovers the live file and sets the indices.
func (l *Log) open() error {
	if _, err := l.fs.Stat(l.dir); errors.Is(err, fs.ErrNotExist) {
		if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
			l.liveBase, l.liveSize = 1, headerLen
			l.degrade(fmt.Errorf("eventlog: create %s: %w", l.dir, err))
			return nil
		}
		// The new directory's own name must be durable too.
		if err := l.fs.SyncDir(filepath.Dir(l.dir)); err != nil {
			l.liveBase, l.liveSize = 1, headerLen
			l.degrade(fmt.Errorf("eventlog: sync dir: %w", err))
			return nil
		}
	} else if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	haveLive := false
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") {
			l.fs.Remove(l.path(name)) // an atomic write a crash cut short; best effort
			continue
		}
		if name == liveName {
			haveLive = true
		} else if seq, ok := parseArchiveName(name); ok {
			l.archives = append(l.archives, archive{seq: seq})
		} else if idx, ok := parseSnapshotName(name); ok {
			l.snaps = append(l.snaps, idx)
		}
	}
	slices.SortFunc(l.archives, func(a, b archive) int { return cmp.Compare(a.seq, b.seq) })
	slices.Sort(l.snaps)
	if err := l.loadArchives(); err != nil {
		return err
	}
	if haveLive {
		if err := l.recoverLive(); err != nil {
			return err
		}
	}
	if n := len(l.snaps); l.live != nil && n > 0 && l.snaps[n-1] > l.last {
		// Damage cut the live file short of the newest snapshot: the
		// snapshot holds what the records held, so the log goes on after
		// it (and the older history, which has a hole, goes).
		l.live.Close()
		l.live = nil
		if err := l.removeArchives(len(l.archives)); err != nil {
			l.degrade(err)
		}
	}
	if l.live == nil {
		base, err := l.baseAfterArchives()
		if err != nil {
			return err
		}
		l.liveBase, l.liveSize = base, headerLen
		l.last, l.written = base-1, base-1
		if err := l.startLive(base); err != nil {
			l.degrade(err)
		}
	}
	l.loadLoss()
	return nil
}

// loadArchives reads each archive's base. An archive whose header cannot be
// read makes it and every older archive unreachable: they are dropped from
// the retained history (reads there get ErrCompacted, so callers fall back
// to a snapshot) and reported in Recovery; the files stay for inspection.
func (l *Log) loadArchives() error {
	if n := len(l.archives); n > 0 {
		l.nextSeq = l.archives[n-1].seq + 1
	}
	for i := 0; i < len(l.archives); i++ {
		a := &l.archives[i]
		err := l.readArchiveHeader(a)
		if err == nil && i > 0 && a.base <= l.archives[i-1].base {
			err = &CorruptionError{File: archiveName(a.seq), Reason: fmt.Sprintf(
				"base index %d not after the previous archive's %d", a.base, l.archives[i-1].base)}
		}
		var ce *CorruptionError
		if errors.As(err, &ce) {
			l.recovery.LostArchives += i + 1
			l.recovery.ArchiveCause = ce
			l.archives = slices.Delete(l.archives, 0, i+1)
			i = -1
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recoverLive scans events.bin. A torn tail (a record cut short, or
// zeros, as a crash leaves them) is truncated. Damage with whole records
// after it, a damaged last record that is not simply cut short, and an
// unreadable header are a loss: the file is kept aside, the loss is
// recorded (see LossError), and the log goes on from the good part. It
// leaves l.live nil when the file must be started afresh.
func (l *Log) recoverLive() error {
	f, err := l.fs.OpenFile(l.path(liveName), os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("eventlog: %w", err)
	}
	size := fi.Size()
	var hdr [headerLen]byte
	if size < headerLen {
		// Cut while being created: nothing in it was ever acknowledged.
		f.Close()
		l.recovery.DroppedBytes, l.recovery.Cause = size, &CorruptionError{
			File: liveName, Reason: fmt.Sprintf("file header cut after %d bytes", size), Torn: true}
		return nil
	}
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		f.Close()
		return fmt.Errorf("eventlog: read %s: %w", liveName, err)
	}
	base, err := parseHeader(hdr[:])
	if n := len(l.archives); err == nil && n > 0 && base <= l.archives[n-1].base {
		if base == l.archives[n-1].base {
			// A crash after rotation archived this file but before it was
			// replaced: the archive holds these records.
			f.Close()
			return nil
		}
		err = fmt.Errorf("base index %d before the newest archive's %d", base, l.archives[n-1].base)
	}
	if err != nil {
		return l.loseHeader(f, size, &CorruptionError{File: liveName, Reason: err.Error()})
	}
	d := decoder{
		r:    bufio.NewReaderSize(io.NewSectionReader(f, headerLen, size-headerLen), 1<<16),
		name: liveName, off: headerLen, limit: size,
	}
	good, want := int64(headerLen), base
	var cause *CorruptionError
	for {
		off := d.off
		index, _, err := d.next()
		if err == io.EOF {
			break
		}
		if errors.As(err, &cause) {
			break
		}
		if err != nil {
			f.Close()
			return err
		}
		if index != want {
			cause = &CorruptionError{File: liveName, Offset: off,
				Reason: fmt.Sprintf("record index %d, want %d", index, want)}
			break
		}
		if (index-base)%sparseStride == 0 {
			l.sparse = append(l.sparse, off)
		}
		want++
		good = d.off
	}
	l.liveBase, l.liveSize = base, good
	l.last, l.written = want-1, want-1
	l.recovery.Records = want - base
	if good == size {
		l.live = f
		return nil
	}
	l.recovery.DroppedBytes, l.recovery.Cause = size-good, cause
	t, err := readTail(f, good, size, want-1)
	if err != nil {
		f.Close()
		return err
	}
	lost := t.last
	if lost == 0 && (t.whole || cause != nil && !cause.Torn && !t.zero) {
		lost = want // the damaged record itself was whole: it held an event
	}
	if n := len(l.snaps); lost == 0 || n > 0 && l.snaps[n-1] >= lost {
		l.live = f
		l.truncateLive(good) // torn, or nothing lost that a snapshot lacks
		return nil
	}
	saved := l.corruptName()
	l.recordLoss(&LossError{After: want - 1, Saved: saved, Cause: cause})
	if err := l.setAside(f, saved); err != nil {
		l.degrade(err)
		return l.cutInPlace(good)
	}
	if l.live, err = l.rebuildLive(saved, good); err != nil {
		// No room for a copy of the good part: put the damaged file back
		// and cut it, which needs no space; the loss stays recorded.
		l.degrade(err)
		if err := l.fs.Rename(l.path(saved), l.path(liveName)); err != nil {
			return fmt.Errorf("eventlog: put %s back as %s: %w", saved, liveName, err)
		}
		return l.cutInPlace(good)
	}
	return nil
}

// cutInPlace opens the damaged live file and cuts it to its good part, when
// it cannot be kept aside.
func (l *Log) cutInPlace(good int64) error {
	f, err := l.fs.OpenFile(l.path(liveName), os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	l.recovery.Loss.Saved = ""
	l.live = f
	l.truncateLive(good)
	return nil
}

// truncateLive cuts the live file to its good part.
func (l *Log) truncateLive(good int64) {
	if err := l.live.Truncate(good); err != nil {
		l.degrade(fmt.Errorf("eventlog: truncate %s: %w", liveName, err))
	} else if err := l.live.Sync(); err != nil {
		l.degrade(fmt.Errorf("eventlog: fsync %s: %w", liveName, err))
	}
}

// loseHeader handles a live file whose header is unreadable (or names an
// impossible base): nothing in it can be trusted, so it is kept aside and
// the log starts afresh after the archives and snapshots, with the loss
// recorded.
func (l *Log) loseHeader(f vfs.File, size int64, cause *CorruptionError) error {
	base, err := l.baseAfterArchives()
	if err != nil {
		f.Close()
		return err
	}
	l.recovery.DroppedBytes, l.recovery.Cause = size, cause
	saved := l.corruptName()
	l.recordLoss(&LossError{After: base - 1, Saved: saved, Cause: cause})
	if err := l.setAside(f, saved); err != nil {
		l.recovery.Loss.Saved = ""
		// startLive replaces the file: the damage is gone, the loss recorded.
	}
	return nil
}

// baseAfterArchives is the index a new live file starts at: after the newest
// archive, or after the newest snapshot when that is later.
func (l *Log) baseAfterArchives() (uint64, error) {
	base := uint64(1)
	if n := len(l.archives); n > 0 {
		last, err := l.archiveLast(l.archives[n-1])
		if err != nil {
			return 0, err
		}
		base = last + 1
	}
	if n := len(l.snaps); n > 0 {
		base = max(base, l.snaps[n-1]+1)
	}
	return base, nil
}

func archiveName(seq uint64) string { return "events." + strconv.FormatUint(seq, 10) + ".bin.zst" }

func parseArchiveName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, "events.")
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, ".bin.zst"); !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	return seq, err == nil && seq > 0 && archiveName(seq) == name
}
