package eventlog

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/skulk/skulk/internal/platform/vfs"
)

const (
	// lossName is the marker of an unacknowledged loss: it outlives the
	// Open that found the damage, which cut the file to its good part.
	lossName = "events.lost"
	// lossAckName keeps the last acknowledged loss, for the record.
	lossAckName = "events.lost.acknowledged"
	// corruptPrefix starts the names of damaged live files kept aside.
	corruptPrefix = liveName + ".corrupt-"
	// scanLimit bounds how much of a damaged file's tail is searched for
	// whole records (a live file is about RotateBytes).
	scanLimit = 256 << 20
)

// lossRecord is the marker's content.
type lossRecord struct {
	After uint64 `json:"after"`
	Saved string `json:"saved,omitempty"`
	Cause string `json:"cause"`
}

// PendingLoss returns the loss recorded in the log directory dir and not
// yet acknowledged, or nil. It only reads, so it may run while another
// process (a node) has the log open. fsys nil means vfs.OS{}.
func PendingLoss(fsys vfs.FS, dir string) (*LossError, error) {
	if fsys == nil {
		fsys = vfs.OS{}
	}
	f, err := fsys.Open(filepath.Join(dir, lossName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("eventlog: read %s: %w", lossName, err)
	}
	var r lossRecord
	if err := json.Unmarshal(b, &r); err != nil {
		// The marker says a loss happened even when its details are gone.
		return &LossError{Cause: &CorruptionError{File: lossName, Reason: err.Error()}}, nil
	}
	return &LossError{After: r.After, Saved: r.Saved, Cause: errors.New(r.Cause)}, nil
}

// AcknowledgeLoss records the operator's acknowledgement of the loss
// recorded in dir (the marker is kept as events.lost.acknowledged) and
// returns it; nil when there was none. A node that has the log open learns
// it through PendingLoss; a later Open no longer reports it. fsys nil means
// vfs.OS{}.
func AcknowledgeLoss(fsys vfs.FS, dir string) (*LossError, error) {
	if fsys == nil {
		fsys = vfs.OS{}
	}
	loss, err := PendingLoss(fsys, dir)
	if err != nil || loss == nil {
		return loss, err
	}
	if err := fsys.Rename(filepath.Join(dir, lossName), filepath.Join(dir, lossAckName)); err != nil {
		return nil, fmt.Errorf("eventlog: acknowledge the loss: %w", err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("eventlog: acknowledge the loss: %w", err)
	}
	return loss, nil
}

// AcknowledgeLoss is the package's AcknowledgeLoss on an open log: Status
// no longer reports the loss.
func (l *Log) AcknowledgeLoss() error {
	if l.closed {
		return ErrClosed
	}
	if l.recovery.Loss == nil {
		return nil
	}
	return l.clearLoss(lossAckName)
}

// LossRecovered clears a recorded loss whose history the owner took back
// from elsewhere (a Raft follower caught up with its leader, which sent
// what the damaged file had): the marker is removed, not kept as an
// acknowledgement, since nothing is missing any more.
func (l *Log) LossRecovered() error {
	if l.closed {
		return ErrClosed
	}
	if l.recovery.Loss == nil {
		return nil
	}
	return l.clearLoss("")
}

// clearLoss removes the loss marker (or renames it to keepAs) and the
// loss from the Status.
func (l *Log) clearLoss(keepAs string) error {
	var err error
	if keepAs == "" {
		err = l.fs.Remove(l.path(lossName))
	} else {
		err = l.fs.Rename(l.path(lossName), l.path(keepAs))
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("eventlog: clear the loss marker: %w", err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("eventlog: sync dir: %w", err)
	}
	l.recovery.Loss = nil
	l.notify()
	return nil
}

// recordLoss writes the loss marker, merged with one already there (the
// earlier loss reaches further back), before anything is cut or moved, so a
// crash that follows cannot hide the loss.
func (l *Log) recordLoss(loss *LossError) {
	if prev, _ := PendingLoss(l.fs, l.dir); prev != nil && prev.After < loss.After {
		loss.After = prev.After
	}
	l.recovery.Loss = loss
	b, _ := json.Marshal(lossRecord{After: loss.After, Saved: loss.Saved, Cause: loss.Cause.Error()})
	if _, err := l.replaceFile(lossName, func(f vfs.File) error {
		_, err := f.Write(b)
		return err
	}); err != nil {
		l.degrade(err)
	}
}

// loadLoss picks up a loss an earlier Open recorded. The log may have lost
// more since (a crash while the damaged file was being set aside): the
// loss then starts at the log's end.
func (l *Log) loadLoss() {
	if l.recovery.Loss != nil {
		return
	}
	if prev, _ := PendingLoss(l.fs, l.dir); prev != nil {
		prev.After = min(prev.After, l.last)
		l.recovery.Loss = prev
	}
}

// corruptName is a fresh name for a damaged live file kept aside.
func (l *Log) corruptName() string {
	base := corruptPrefix + l.opts.Now().UTC().Format("20060102T150405Z")
	name := base
	for i := 2; ; i++ {
		if _, err := l.fs.Stat(l.path(name)); errors.Is(err, fs.ErrNotExist) {
			return name
		}
		name = base + "-" + strconv.Itoa(i)
	}
}

// setAside moves the live file to saved, durably. f is closed.
func (l *Log) setAside(f vfs.File, saved string) error {
	f.Close()
	if err := l.fs.Rename(l.path(liveName), l.path(saved)); err != nil {
		return fmt.Errorf("eventlog: keep the damaged %s aside: %w", liveName, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("eventlog: sync dir: %w", err)
	}
	return nil
}

// rebuildLive writes a new live file holding the first good bytes of the
// damaged file saved, and opens it.
func (l *Log) rebuildLive(saved string, good int64) (vfs.File, error) {
	src, err := l.fs.Open(l.path(saved))
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	defer src.Close()
	if _, err := l.replaceFile(liveName, func(f vfs.File) error {
		_, err := io.Copy(f, io.NewSectionReader(src, 0, good))
		return err
	}); err != nil {
		return nil, err
	}
	f, err := l.fs.OpenFile(l.path(liveName), os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("eventlog: open %s: %w", liveName, err)
	}
	return f, nil
}

// tail describes what follows the last good record of a live file.
type tail struct {
	zero bool   // nothing but zero bytes: a crash left the file longer than its data
	last uint64 // the highest index of a whole record in it (0: none)
	// whole: the bytes are exactly one record whose length field was
	// damaged (its CRC holds for the length the file gives it), not a
	// record a crash cut short.
	whole bool
}

// readTail examines the bytes of f from off to size: whether they are all
// zero, and the highest index above after of a whole, checksummed record
// starting anywhere in them. A crash cuts the file inside the last record
// it was writing, so a whole record after the damage means the damage is
// in the middle.
func readTail(f vfs.File, off, size int64, after uint64) (tail, error) {
	b := make([]byte, min(size-off, scanLimit))
	if n, err := f.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return tail{}, fmt.Errorf("eventlog: read %s: %w", liveName, err)
	}
	t := tail{zero: true}
	for _, c := range b {
		if c != 0 {
			t.zero = false
			break
		}
	}
	if n := len(b) - recordOverhead; n >= 0 && n <= MaxPayload {
		crc := crc32.Update(crc32.Checksum(binary.BigEndian.AppendUint32(nil, uint32(n)), castagnoli), castagnoli, b[4:len(b)-4])
		t.whole = binary.BigEndian.Uint32(b[len(b)-4:]) == crc
	}
	// Indices rise by one per record of at least recordOverhead bytes: a
	// record claiming more is no record of this file.
	top := after + uint64(len(b)/recordOverhead) + 1
	for o := 0; o+recordOverhead <= len(b); o++ {
		length := int(binary.BigEndian.Uint32(b[o:]))
		if length > MaxPayload || o+recordOverhead+length > len(b) {
			continue
		}
		index := binary.BigEndian.Uint64(b[o+4:])
		if index <= after || index > top {
			continue
		}
		end := o + recordPrefix + length
		if binary.BigEndian.Uint32(b[end:]) != crc32.Checksum(b[o:end], castagnoli) {
			continue
		}
		t.last = max(t.last, index)
		o = end + 3 // the loop's o++ lands after the CRC
	}
	return t, nil
}
