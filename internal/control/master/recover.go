package master

import (
	"errors"
	"fmt"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/control/state"
)

// Recover rebuilds the State from the newest snapshot and the log after it.
// An event that fails to decode or apply stops the replay with an error:
// the log is the source of truth and must not be silently skipped.
func Recover(log *eventlog.Log) (state.State, error) {
	var st state.State
	idx, blob, err := log.LoadSnapshot()
	switch {
	case err == nil:
		if st, err = state.Decode(blob); err != nil {
			return state.State{}, fmt.Errorf("master: snapshot at %d: %w", idx, err)
		}
		if uint64(st.LastIndex) != idx {
			return state.State{}, fmt.Errorf("master: snapshot file says index %d, its State says %d", idx, st.LastIndex)
		}
	case errors.Is(err, eventlog.ErrNoSnapshot):
	default:
		return state.State{}, fmt.Errorf("master: load snapshot: %w", err)
	}
	if log.LastIndex() <= uint64(st.LastIndex) {
		return st, nil
	}
	it, err := log.Iterate(uint64(st.LastIndex) + 1)
	if err != nil {
		return state.State{}, fmt.Errorf("master: replay from %d: %w", st.LastIndex+1, err)
	}
	defer it.Close()
	for it.Next() {
		ie, err := event.DecodeIndexed(it.Payload())
		if err != nil {
			return state.State{}, fmt.Errorf("master: event %d: %w", it.Index(), err)
		}
		if st, err = state.Apply(st, ie); err != nil {
			return state.State{}, fmt.Errorf("master: replay event %d: %w", it.Index(), err)
		}
	}
	if err := it.Err(); err != nil {
		return state.State{}, fmt.Errorf("master: replay: %w", err)
	}
	return st, nil
}
