package event

import (
	"fmt"
	"slices"

	"github.com/fxamacker/cbor/v2"
)

// The kinds of the per-request task lifecycle the control plane once
// ordered. Requests no longer pass through the control plane and no master
// appends these, but logs written before may hold them: a home of the
// format before Raft replays its old log when it upgrades, and the first
// masters on Raft settled the tasks an upgraded State still held with
// TaskFinished. They decode to a RetiredTask.
const (
	KindTaskCreated      Kind = "TaskCreated"
	KindTaskAcknowledged Kind = "TaskAcknowledged"
	KindTaskCancelled    Kind = "TaskCancelled"
	KindTaskFinished     Kind = "TaskFinished"
)

// RetiredKinds lists the event kinds only old logs hold.
func RetiredKinds() []Kind {
	return []Kind{KindTaskCreated, KindTaskAcknowledged, KindTaskCancelled, KindTaskFinished}
}

// RetiredTask is a logged event of a retired kind. Its body is kept as
// bytes, not decoded into fields: nothing reads them, the State applies the
// event as nothing, and the event encodes back to the bytes it was decoded
// from, so a log that holds one replays and is served on unchanged.
type RetiredTask struct {
	Retired Kind            `json:"kind"`
	Body    cbor.RawMessage `json:"-"`
}

func (e RetiredTask) Kind() Kind { return e.Retired }
func (RetiredTask) isEvent()     {}

// MarshalCBOR returns the body as it was logged.
func (e RetiredTask) MarshalCBOR() ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e.Body, nil
}

func (e RetiredTask) Validate() error {
	var kindErr, bodyErr error
	if !slices.Contains(RetiredKinds(), e.Retired) {
		kindErr = fmt.Errorf("%q is not a retired kind", truncate(string(e.Retired)))
	}
	if len(e.Body) == 0 || e.Body[0]>>5 != 5 {
		bodyErr = fmt.Errorf("the body is not a map")
	}
	return firstInvalid(e.Retired, check{"kind", kindErr}, check{"body", bodyErr})
}

func decodeRetired(k Kind, body []byte) (Event, error) {
	var raw cbor.RawMessage
	if err := cborBody("event", k, body, &raw); err != nil {
		return nil, err
	}
	e := RetiredTask{Retired: k, Body: raw}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e, nil
}
