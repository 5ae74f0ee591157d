package state

import (
	"fmt"
	"iter"

	"github.com/skulk/skulk/internal/control/event"
)

// Recover rebuilds a State from a snapshot taken at snapIndex (nil, and 0,
// when there is none) and the log after it: records yields the encoded
// indexed events from the index it is given on, in order (an
// eventlog.Log's Records). An event that fails to decode or apply stops the
// replay with an error: the log is the source of truth and must not be
// silently skipped. An old log's task events replay as nothing
// (event.RetiredTask).
func Recover(snapIndex uint64, snapshot []byte, records func(from uint64) iter.Seq2[[]byte, error]) (State, error) {
	var st State
	if snapshot != nil {
		var err error
		if st, err = Decode(snapshot); err != nil {
			return State{}, fmt.Errorf("state: snapshot at %d: %w", snapIndex, err)
		}
		if uint64(st.LastIndex) != snapIndex {
			return State{}, fmt.Errorf("state: snapshot file says index %d, its State says %d", snapIndex, st.LastIndex)
		}
	}
	from := uint64(st.LastIndex) + 1
	for b, err := range records(from) {
		if err != nil {
			return State{}, fmt.Errorf("state: replay from %d: %w", from, err)
		}
		ie, err := event.DecodeIndexed(b)
		if err != nil {
			return State{}, fmt.Errorf("state: event %d: %w", st.LastIndex+1, err)
		}
		if st, err = Apply(st, ie); err != nil {
			return State{}, fmt.Errorf("state: replay event %d: %w", ie.Index, err)
		}
	}
	return st, nil
}
