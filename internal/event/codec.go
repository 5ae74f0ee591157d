package event

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"github.com/skulk/skulk/internal/ids"
)

// MaxEncodedBytes bounds one encoded Command, Event or IndexedEvent, checked
// before any decoding so a hostile length cannot drive allocation.
const MaxEncodedBytes = 1 << 20

// The codec's modes are built once and never change: they are lookup tables,
// not state, and cbor modes are safe for concurrent use.
var (
	encMode = mustEncMode()
	decMode = mustDecMode()
)

// CanonicalEncMode is the one canonical encoding of the control plane: CBOR
// core deterministic, with nil and empty containers encoded alike (so a
// value's bytes do not depend on which codec, CBOR or JSON, produced it).
// The State's snapshots and hash use it too.
func CanonicalEncMode() cbor.EncMode { return encMode }

// StrictDecOptions are the decoding rules every control-plane decoder
// shares: no duplicate keys, indefinite lengths, tags or unknown fields, and
// case-sensitive names. Callers set the size limits of what they decode.
func StrictDecOptions() cbor.DecOptions {
	return cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		FieldNameMatching: cbor.FieldNameMatchingCaseSensitive,
	}
}

func mustEncMode() cbor.EncMode {
	opts := cbor.CoreDetEncOptions()
	opts.NilContainers = cbor.NilContainerAsEmpty
	m, err := opts.EncMode()
	if err != nil {
		panic(fmt.Sprintf("event: cbor encoder options: %v", err))
	}
	return m
}

func mustDecMode() cbor.DecMode {
	opts := StrictDecOptions()
	opts.MaxNestedLevels, opts.MaxArrayElements, opts.MaxMapPairs = 16, 4*MaxRanks, 64
	m, err := opts.DecMode()
	if err != nil {
		panic(fmt.Sprintf("event: cbor decoder options: %v", err))
	}
	return m
}

type envelope struct {
	Kind Kind            `json:"kind"`
	Body cbor.RawMessage `json:"body"`
}

type indexedEnvelope struct {
	Term  ids.Term        `json:"term"`
	Index ids.Index       `json:"index"`
	Kind  Kind            `json:"kind"`
	Body  cbor.RawMessage `json:"body"`
}

// EncodeEvent returns the canonical CBOR envelope of ev. It does not
// validate ev; callers that accept events from outside call Validate or
// Admit first.
func EncodeEvent(ev Event) ([]byte, error) {
	if ev == nil {
		return nil, fmt.Errorf("event: encoding a nil event")
	}
	return encodeEnvelope(ev.Kind(), ev)
}

// EncodeCommand returns the canonical CBOR envelope of c.
func EncodeCommand(c Command) ([]byte, error) {
	if c == nil {
		return nil, fmt.Errorf("event: encoding a nil command")
	}
	return encodeEnvelope(c.Kind(), c)
}

// EncodeIndexed returns the canonical CBOR encoding of ie.
func EncodeIndexed(ie IndexedEvent) ([]byte, error) {
	if ie.Event == nil {
		return nil, fmt.Errorf("event: encoding an indexed event without an event")
	}
	body, err := encMode.Marshal(ie.Event)
	if err != nil {
		return nil, fmt.Errorf("event: encoding %s body: %w", ie.Event.Kind(), err)
	}
	return encMode.Marshal(indexedEnvelope{Term: ie.Term, Index: ie.Index, Kind: ie.Event.Kind(), Body: body})
}

func encodeEnvelope(k Kind, v any) ([]byte, error) {
	body, err := encMode.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("event: encoding %s body: %w", k, err)
	}
	b, err := encMode.Marshal(envelope{Kind: k, Body: body})
	if err != nil {
		return nil, fmt.Errorf("event: encoding %s envelope: %w", k, err)
	}
	return b, nil
}

// DecodeEvent strictly decodes one event envelope and validates the event.
func DecodeEvent(b []byte) (Event, error) {
	var env envelope
	if err := unmarshal("event", "", b, &env); err != nil {
		return nil, err
	}
	return decodeEventBody(env.Kind, env.Body, cborBody)
}

// DecodeCommand strictly decodes one command envelope and validates the
// command.
func DecodeCommand(b []byte) (Command, error) {
	var env envelope
	if err := unmarshal("command", "", b, &env); err != nil {
		return nil, err
	}
	return decodeCommandBody(env.Kind, env.Body, cborBody)
}

// DecodeIndexed strictly decodes one indexed event and validates it.
func DecodeIndexed(b []byte) (IndexedEvent, error) {
	var env indexedEnvelope
	if err := unmarshal("indexed event", "", b, &env); err != nil {
		return IndexedEvent{}, err
	}
	ev, err := decodeEventBody(env.Kind, env.Body, cborBody)
	if err != nil {
		return IndexedEvent{}, err
	}
	ie := IndexedEvent{Term: env.Term, Index: env.Index, Event: ev}
	if err := ie.Validate(); err != nil {
		return IndexedEvent{}, err
	}
	return ie, nil
}

func unmarshal(what string, k Kind, b []byte, v any) error {
	if len(b) > MaxEncodedBytes {
		return &DecodeError{What: what, Kind: k, Err: fmt.Errorf("%d bytes, limit %d", len(b), MaxEncodedBytes)}
	}
	if err := decMode.Unmarshal(b, v); err != nil {
		return &DecodeError{What: what, Kind: k, Err: err}
	}
	return nil
}

// bodyDecoder decodes one body into v; the CBOR and JSON forms share the
// kind dispatch below.
type bodyDecoder func(what string, k Kind, body []byte, v any) error

func cborBody(what string, k Kind, body []byte, v any) error {
	if len(body) == 0 {
		return &DecodeError{What: what, Kind: k, Err: fmt.Errorf("missing body")}
	}
	// Bodies are maps (major type 5); null or a scalar would decode to a
	// zero struct and slip past the unknown-field check.
	if body[0]>>5 != 5 {
		return &DecodeError{What: what, Kind: k, Err: fmt.Errorf("body is not a map (initial byte 0x%02x)", body[0])}
	}
	return unmarshal(what, k, body, v)
}

func decodeEventBody(k Kind, body []byte, dec bodyDecoder) (Event, error) {
	switch k {
	case KindInstanceCreated:
		return decodeEventAs[InstanceCreated](k, body, dec)
	case KindInstanceDeleted:
		return decodeEventAs[InstanceDeleted](k, body, dec)
	case KindInstanceFailed:
		return decodeEventAs[InstanceFailed](k, body, dec)
	case KindRunnerStatusUpdated:
		return decodeEventAs[RunnerStatusUpdated](k, body, dec)
	case KindTaskCreated:
		return decodeEventAs[TaskCreated](k, body, dec)
	case KindTaskAcknowledged:
		return decodeEventAs[TaskAcknowledged](k, body, dec)
	case KindTaskCancelled:
		return decodeEventAs[TaskCancelled](k, body, dec)
	case KindTaskFinished:
		return decodeEventAs[TaskFinished](k, body, dec)
	case KindNodeJoined:
		return decodeEventAs[NodeJoined](k, body, dec)
	case KindNodeLeft:
		return decodeEventAs[NodeLeft](k, body, dec)
	case KindDownloadPending:
		return decodeEventAs[DownloadPending](k, body, dec)
	case KindDownloadCompleted:
		return decodeEventAs[DownloadCompleted](k, body, dec)
	case KindDownloadFailed:
		return decodeEventAs[DownloadFailed](k, body, dec)
	case KindTracingSet:
		return decodeEventAs[TracingSet](k, body, dec)
	case KindMasterElected:
		return decodeEventAs[MasterElected](k, body, dec)
	case KindAPIKeysSet:
		return decodeEventAs[APIKeysSet](k, body, dec)
	}
	return nil, &UnknownKindError{Kind: k, Want: "event"}
}

func decodeEventAs[T Event](k Kind, body []byte, dec bodyDecoder) (Event, error) {
	var e T
	if err := dec("event", k, body, &e); err != nil {
		return nil, err
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e, nil
}

func decodeCommandBody(k Kind, body []byte, dec bodyDecoder) (Command, error) {
	switch k {
	case KindPlaceInstance:
		return decodeCommandAs[PlaceInstance](k, body, dec)
	case KindCreateInstance:
		return decodeCommandAs[CreateInstance](k, body, dec)
	case KindDeleteInstance:
		return decodeCommandAs[DeleteInstance](k, body, dec)
	case KindTextGeneration:
		return decodeCommandAs[TextGeneration](k, body, dec)
	case KindCancelTask:
		return decodeCommandAs[CancelTask](k, body, dec)
	case KindSetTracingEnabled:
		return decodeCommandAs[SetTracingEnabled](k, body, dec)
	case KindRefuseInstancePlacement:
		return decodeCommandAs[RefuseInstancePlacement](k, body, dec)
	case KindFailInstance:
		return decodeCommandAs[FailInstance](k, body, dec)
	}
	return nil, &UnknownKindError{Kind: k, Want: "command"}
}

func decodeCommandAs[T Command](k Kind, body []byte, dec bodyDecoder) (Command, error) {
	var c T
	if err := dec("command", k, body, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}
