package state

import (
	"errors"
	"fmt"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Sentinels for the conditions callers branch on (errors.Is). Apply wraps
// each in an *ApplyError.
var (
	// ErrOutOfOrder: the event's index is not LastIndex+1. A follower asks
	// for a replay of the gap; it is never a reason to skip.
	ErrOutOfOrder = errors.New("state: event out of order")
	// ErrStaleTerm: the event's term is below the State's, so it comes
	// from a deposed master, or a MasterElected does not raise the term.
	ErrStaleTerm = errors.New("state: stale term")
	// ErrTermMismatch: the term rose without a MasterElected announcing
	// it, or a MasterElected names a term other than its position's.
	ErrTermMismatch = errors.New("state: term mismatch")
	// ErrUnknownNode, ErrUnknownInstance: the event names something the
	// State does not hold.
	ErrUnknownNode     = errors.New("state: unknown node")
	ErrUnknownInstance = errors.New("state: unknown instance")
	// ErrUnknownModel: the event names a model the State's catalog does
	// not hold.
	ErrUnknownModel = errors.New("state: unknown model")
	// ErrUnknownKey: the event names a run-time API key the State does
	// not hold.
	ErrUnknownKey = errors.New("state: unknown API key")
	// ErrExists: the event creates something that already exists.
	ErrExists = errors.New("state: already exists")
	// ErrConflict: the event contradicts the State (a runner reported from
	// the wrong node, a card under a taken id, ...).
	ErrConflict = errors.New("state: conflicts with state")
	// ErrBusy: removal refused while dependants remain (a node with placed
	// ranks, a model with instances). The master must delete those first.
	ErrBusy = errors.New("state: still in use")
	// ErrCorrupt: a snapshot failed to decode or breaks an invariant.
	ErrCorrupt = errors.New("state: corrupt snapshot")
)

// ApplyError reports an event Apply rejected. Err wraps one of the
// sentinels above (or an *event.InvalidError).
type ApplyError struct {
	Term  ids.Term
	Index ids.Index
	Kind  event.Kind
	Err   error
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("state: applying %s at term %d index %d: %v", e.Kind, e.Term, e.Index, e.Err)
}

func (e *ApplyError) Unwrap() error { return e.Err }

// CorruptError reports a snapshot that cannot be trusted.
type CorruptError struct {
	Err error
}

func (e *CorruptError) Error() string { return fmt.Sprintf("state: corrupt snapshot: %v", e.Err) }

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func (e *CorruptError) Unwrap() error { return e.Err }
