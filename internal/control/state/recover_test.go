package state

import (
	"errors"
	"iter"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/skulk/skulk/internal/control/event"
)

// records serves encoded indexed events from index 1 on, as a log does,
// failing with fail after them when fail is set.
func records(t *testing.T, evs []event.IndexedEvent, fail error) func(uint64) iter.Seq2[[]byte, error] {
	t.Helper()
	enc := make([][]byte, len(evs))
	for i, ie := range evs {
		b, err := event.EncodeIndexed(ie)
		if err != nil {
			t.Fatal(err)
		}
		enc[i] = b
	}
	return func(from uint64) iter.Seq2[[]byte, error] {
		return func(yield func([]byte, error) bool) {
			for _, b := range enc[min(int(from-1), len(enc)):] {
				if !yield(b, nil) {
					return
				}
			}
			if fail != nil {
				yield(nil, fail)
			}
		}
	}
}

// TestRecover replays a log from its snapshot, or from the start without
// one, to the State the same history applies to; an old log's task events
// replay as nothing; a record that does not decode or apply, a failing log
// and a snapshot of another index stop the replay.
func TestRecover(t *testing.T) {
	want := base(t)
	var log []event.IndexedEvent
	s := State{}
	for _, ev := range []event.Event{
		event.MasterElected{Node: "a", Term: 1}, event.NodeJoined{Node: "a", AtUnixMs: 1},
		event.NodeJoined{Node: "b", AtUnixMs: 2}, event.NodeJoined{Node: "c", AtUnixMs: 3},
		twoRank("i1", "m", "a", "b"), ready("i1", 0, "a"), ready("i1", 1, "b"),
	} {
		ie := next(s, ev)
		s = replay(t, s, ev)
		log = append(log, ie)
	}
	// The eighth event is a TaskCreated as the master of an earlier
	// release logged it.
	body, err := cbor.Marshal(map[string]any{"task": "t1", "command": "c-t1", "task_kind": "text_generation", "model": "m",
		"instance": "i1", "owner": "c", "payload": map[string]any{"digest": make([]byte, 32), "size": 10}, "created_at_unix_ms": 2000})
	if err != nil {
		t.Fatal(err)
	}
	log = append(log, event.IndexedEvent{Term: 1, Index: 8, Event: event.RetiredTask{Retired: event.KindTaskCreated, Body: body}})
	snap, err := Encode(s) // at index 7
	if err != nil {
		t.Fatal(err)
	}
	broken := append([]event.IndexedEvent(nil), log...)
	broken[2] = event.IndexedEvent{Term: 1, Index: 3, Event: event.NodeLeft{Node: "z", Reason: event.LeaveGraceful}}
	failing := errors.New("disk gone")
	tests := []struct {
		name     string
		idx      uint64
		snapshot []byte
		records  func(uint64) iter.Seq2[[]byte, error]
		wantErr  error // nil: want the base State
	}{
		{"from_the_start", 0, nil, records(t, log, nil), nil},
		{"from_a_snapshot", 7, snap, records(t, log, nil), nil},
		{"snapshot_of_another_index", 6, snap, records(t, log, nil), errors.New("any")},
		{"an_event_that_does_not_apply", 0, nil, records(t, broken, nil), ErrUnknownNode},
		{"a_failing_log", 0, nil, records(t, log, failing), failing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Recover(tt.idx, tt.snapshot, tt.records)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatal(err)
			case tt.wantErr == nil && Hash(got) != Hash(want):
				t.Fatalf("recovered %+v, want %+v", got, want)
			case tt.wantErr != nil && err == nil:
				t.Fatal("recovered, want an error")
			case tt.wantErr != nil && tt.name != "snapshot_of_another_index" && !errors.Is(err, tt.wantErr):
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
		})
	}
}
