package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// Snapshot file format (big-endian), written atomically:
//
//	+-----------+-------------+-----------+------------+---------------+---------+
//	| magic (6) | version (2) | index (8) | length (8) | blob (length) | CRC (4) |
//	| "SKULKS"  | 1           |           |            |               |         |
//	+-----------+-------------+-----------+------------+---------------+---------+
//	CRC is CRC-32C of everything before it.
const (
	snapMagic     = "SKULKS"
	snapHeaderLen = 24
	// MaxSnapshot bounds a snapshot blob.
	MaxSnapshot = 1 << 30
)

func snapshotName(index uint64) string { return fmt.Sprintf("snapshot.%020d.bin", index) }

func parseSnapshotName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, "snapshot.")
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, ".bin"); !ok {
		return 0, false
	}
	i, err := strconv.ParseUint(s, 10, 64)
	return i, err == nil && snapshotName(i) == name
}

// SaveSnapshot atomically stores blob as the snapshot at index, which must
// not be past LastIndex(), and deletes snapshots beyond
// Options.SnapshotsRetained. It fails with ErrDegraded on a degraded log; a
// write error degrades the log and is returned.
func (l *Log) SaveSnapshot(index uint64, blob []byte) error {
	switch {
	case l.closed:
		return ErrClosed
	case index > l.last:
		return fmt.Errorf("%w: snapshot at %d, last index %d", ErrOutOfRange, index, l.last)
	case len(blob) > MaxSnapshot:
		return fmt.Errorf("%w: snapshot of %d bytes, limit %d", ErrTooLarge, len(blob), MaxSnapshot)
	case l.cause != nil:
		return fmt.Errorf("eventlog: save snapshot: %w", ErrDegraded)
	}
	if _, err := l.replaceFile(snapshotName(index), func(f vfs.File) error {
		_, err := f.Write(encodeSnapshot(index, blob))
		return err
	}); err != nil {
		l.degrade(err)
		return err
	}
	if n := len(l.snaps); n == 0 || l.snaps[n-1] != index {
		l.snaps = append(l.snaps, index)
	}
	if extra := len(l.snaps) - l.opts.SnapshotsRetained; extra > 0 {
		for _, i := range l.snaps[:extra] {
			if err := l.fs.Remove(l.path(snapshotName(i))); err != nil {
				err = fmt.Errorf("eventlog: remove old snapshot: %w", err)
				l.degrade(err)
				return err
			}
		}
		l.snaps = append(l.snaps[:0], l.snaps[extra:]...)
		if err := l.fs.SyncDir(l.dir); err != nil {
			err = fmt.Errorf("eventlog: sync dir: %w", err)
			l.degrade(err)
			return err
		}
	}
	return nil
}

// LoadSnapshot returns the newest readable snapshot. A corrupt newer one is
// skipped for an older one; when none is readable the error is the newest's
// *CorruptionError, and ErrNoSnapshot when there are none.
func (l *Log) LoadSnapshot() (uint64, []byte, error) {
	if l.closed {
		return 0, nil, ErrClosed
	}
	var first error
	for i := len(l.snaps) - 1; i >= 0; i-- {
		blob, err := l.readSnapshot(l.snaps[i])
		if err == nil {
			return l.snaps[i], blob, nil
		}
		if first == nil {
			first = err
		}
	}
	if first != nil {
		return 0, nil, first
	}
	return 0, nil, ErrNoSnapshot
}

func (l *Log) readSnapshot(index uint64) ([]byte, error) {
	name := snapshotName(index)
	f, err := l.fs.Open(l.path(name))
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	// The file's size bounds the allocation, and MaxSnapshot bounds that.
	if fi.Size() < snapHeaderLen+4 || fi.Size() > snapHeaderLen+4+MaxSnapshot {
		return nil, &CorruptionError{File: name, Reason: fmt.Sprintf("size %d out of range", fi.Size())}
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("eventlog: read %s: %w", name, err)
	}
	got, blob, err := decodeSnapshot(b)
	if err != nil {
		return nil, &CorruptionError{File: name, Reason: err.Error()}
	}
	if got != index {
		return nil, &CorruptionError{File: name, Reason: fmt.Sprintf("holds index %d", got)}
	}
	return blob, nil
}

func encodeSnapshot(index uint64, blob []byte) []byte {
	b := make([]byte, 0, snapHeaderLen+len(blob)+4)
	b = append(b, snapMagic...)
	b = binary.BigEndian.AppendUint16(b, formatVersion)
	b = binary.BigEndian.AppendUint64(b, index)
	b = binary.BigEndian.AppendUint64(b, uint64(len(blob)))
	b = append(b, blob...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeSnapshot(b []byte) (uint64, []byte, error) {
	switch {
	case len(b) < snapHeaderLen+4:
		return 0, nil, errors.New("snapshot shorter than its header")
	case string(b[:6]) != snapMagic:
		return 0, nil, fmt.Errorf("snapshot: bad magic %q", b[:6])
	case binary.BigEndian.Uint16(b[6:8]) != formatVersion:
		return 0, nil, fmt.Errorf("snapshot: unsupported version %d", binary.BigEndian.Uint16(b[6:8]))
	case binary.BigEndian.Uint64(b[16:24]) != uint64(len(b)-snapHeaderLen-4):
		return 0, nil, fmt.Errorf("snapshot: length %d, file holds %d", binary.BigEndian.Uint64(b[16:24]), len(b)-snapHeaderLen-4)
	case binary.BigEndian.Uint32(b[len(b)-4:]) != crc32.Checksum(b[:len(b)-4], castagnoli):
		return 0, nil, errors.New("snapshot: CRC mismatch")
	}
	return binary.BigEndian.Uint64(b[8:16]), b[snapHeaderLen : len(b)-4], nil
}
