package eventlog

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// Reset discards the whole history and restarts the log at a snapshot: blob
// becomes the snapshot at index and the next Append must be index+1. A
// follower installs its master's snapshot this way when its own log fell
// behind the master's retained history or diverged from it.
//
// Files go in an order that keeps a crash safe: first the live file,
// archives and old snapshots are removed, then the snapshot is written, then
// a fresh live file starts at index+1. Open after a crash part way finds
// either a shorter consistent history or the new start (a snapshot with no
// live file starts the live file after it); the follower then resyncs.
//
// A history replaced this way no longer misses anything: a recorded loss
// (Status().Recovery.Loss) is cleared. On a degraded log Reset only counts:
// the next Append must be index+1, and Heal writes the state later.
func (l *Log) Reset(index uint64, blob []byte) error {
	switch {
	case l.closed:
		return ErrClosed
	case len(blob) > MaxSnapshot:
		return fmt.Errorf("%w: snapshot of %d bytes, limit %d", ErrTooLarge, len(blob), MaxSnapshot)
	case l.cause != nil:
		l.last = index
		return nil
	}
	return l.reset(index, blob)
}

// reset is Reset on a log that writes.
func (l *Log) reset(index uint64, blob []byte) error {
	fail := func(err error) error {
		l.degrade(err)
		return err
	}
	if l.live != nil {
		l.live.Close()
		l.live = nil
	}
	if err := l.fs.Remove(l.path(liveName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(fmt.Errorf("eventlog: reset: remove %s: %w", liveName, err))
	}
	if err := l.removeArchives(len(l.archives)); err != nil {
		return fail(err)
	}
	for _, i := range l.snaps {
		if err := l.fs.Remove(l.path(snapshotName(i))); err != nil {
			return fail(fmt.Errorf("eventlog: reset: remove snapshot: %w", err))
		}
	}
	l.snaps = l.snaps[:0]
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fail(fmt.Errorf("eventlog: reset: sync dir: %w", err))
	}
	if _, err := l.replaceFile(snapshotName(index), func(f vfs.File) error {
		_, err := f.Write(encodeSnapshot(index, blob))
		return err
	}); err != nil {
		return fail(err)
	}
	l.snaps = append(l.snaps, index)
	l.last, l.written = index, index
	if err := l.startLive(index + 1); err != nil {
		return fail(err)
	}
	if l.recovery.Loss != nil {
		if err := l.clearLoss(""); err != nil {
			return fail(err)
		}
	}
	return nil
}
