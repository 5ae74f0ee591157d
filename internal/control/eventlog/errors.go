package eventlog

import (
	"errors"
	"fmt"
)

// Sentinel errors. The typed errors below match them with errors.Is.
var (
	// ErrClosed is returned by every method of a closed Log.
	ErrClosed = errors.New("eventlog: log is closed")
	// ErrCorrupt marks data that failed validation; see CorruptionError.
	ErrCorrupt = errors.New("eventlog: corrupt data")
	// ErrCompacted means the requested index is older than the retained
	// history: load the snapshot instead. See CompactedError.
	ErrCompacted = errors.New("eventlog: index compacted")
	// ErrNotWritten means the requested index was counted in degraded mode
	// and never written.
	ErrNotWritten = errors.New("eventlog: index counted in degraded mode, never written")
	// ErrOutOfRange means an index beyond the log's last index.
	ErrOutOfRange = errors.New("eventlog: index beyond the end of the log")
	// ErrTooLarge means a payload larger than MaxPayload.
	ErrTooLarge = errors.New("eventlog: payload too large")
	// ErrNoSnapshot means there is no readable snapshot.
	ErrNoSnapshot = errors.New("eventlog: no snapshot")
	// ErrDegraded is returned by operations that must write (SaveSnapshot)
	// on a log in counting-only mode.
	ErrDegraded = errors.New("eventlog: degraded, not writing")
	// ErrLowSpace marks a free-space reading under the floor; see
	// LowSpaceError.
	ErrLowSpace = errors.New("eventlog: free space under the floor")
	// ErrHistoryLost marks records the log held once and lost to damage;
	// see LossError.
	ErrHistoryLost = errors.New("eventlog: history lost")
)

// GapError is returned by Append when the index is not LastIndex()+1. The
// log is unchanged.
type GapError struct {
	Want, Got uint64
}

func (e *GapError) Error() string {
	return fmt.Sprintf("eventlog: append index %d, want %d", e.Got, e.Want)
}

// CorruptionError describes data that failed validation: where, and why.
// Torn is set when the data simply ends early, as a crash mid-write leaves it.
type CorruptionError struct {
	File   string
	Offset int64 // byte offset of the bad record or header in the (decompressed) file
	Reason string
	Torn   bool
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("eventlog: %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

// CompactedError reports a read from before the first retained index.
type CompactedError struct {
	Index uint64 // requested
	First uint64 // oldest index still held
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("eventlog: index %d compacted, history starts at %d", e.Index, e.First)
}

// Is makes errors.Is(err, ErrCompacted) true.
func (e *CompactedError) Is(target error) bool { return target == ErrCompacted }

// LowSpaceError is the degraded-mode cause when free space fell under the
// floor.
type LowSpaceError struct {
	Dir         string // the log's directory: the disk is the one holding it
	Free, Floor uint64
}

func (e *LowSpaceError) Error() string {
	return fmt.Sprintf("eventlog: %d bytes free on the disk of %s, under the floor of %d", e.Free, e.Dir, e.Floor)
}

// Is makes errors.Is(err, ErrLowSpace) true.
func (e *LowSpaceError) Is(target error) bool { return target == ErrLowSpace }

// LossError says the log lost records it once held: the live file had a
// damaged record with intact records after it (or a damaged last record
// that was not simply cut short), or an unreadable header. The log kept
// what came before the damage; everything after index After is gone from
// this disk. The damaged file is kept as Saved (in the log's directory)
// for inspection. Open reports it in Status().Recovery.Loss, and every
// later Open too, until Reset replaces the history or the loss is
// acknowledged (AcknowledgeLoss).
type LossError struct {
	After uint64
	Saved string // empty when the damaged file could not be kept
	Cause error  // what was found, typically a *CorruptionError
}

func (e *LossError) Error() string {
	saved := "not kept"
	if e.Saved != "" {
		saved = "kept as " + e.Saved
	}
	return fmt.Sprintf("eventlog: history lost after index %d (damaged file %s): %v", e.After, saved, e.Cause)
}

// Is makes errors.Is(err, ErrHistoryLost) true.
func (e *LossError) Is(target error) bool { return target == ErrHistoryLost }

func (e *LossError) Unwrap() error { return e.Cause }
