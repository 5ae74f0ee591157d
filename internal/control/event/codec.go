package event

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"github.com/skulk/skulk/internal/platform/ids"
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
// value's bytes do not depend on whether a slice was nil or empty).
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
	return decodeEventBody(env.Kind, env.Body)
}

// DecodeCommand strictly decodes one command envelope and validates the
// command.
func DecodeCommand(b []byte) (Command, error) {
	var env envelope
	if err := unmarshal("command", "", b, &env); err != nil {
		return nil, err
	}
	return decodeCommandBody(env.Kind, env.Body)
}

// DecodeIndexed strictly decodes one indexed event and validates it.
func DecodeIndexed(b []byte) (IndexedEvent, error) {
	var env indexedEnvelope
	if err := unmarshal("indexed event", "", b, &env); err != nil {
		return IndexedEvent{}, err
	}
	ev, err := decodeEventBody(env.Kind, env.Body)
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

func decodeEventBody(k Kind, body []byte) (Event, error) {
	switch k {
	case KindInstanceCreated:
		return decodeEventAs[InstanceCreated](k, body)
	case KindInstanceDeleted:
		return decodeEventAs[InstanceDeleted](k, body)
	case KindInstanceFailed:
		return decodeEventAs[InstanceFailed](k, body)
	case KindRunnerStatusUpdated:
		return decodeEventAs[RunnerStatusUpdated](k, body)
	case KindTaskCreated, KindTaskAcknowledged, KindTaskCancelled, KindTaskFinished:
		return decodeRetired(k, body)
	case KindNodeJoined:
		return decodeEventAs[NodeJoined](k, body)
	case KindNodeLeft:
		return decodeEventAs[NodeLeft](k, body)
	case KindDownloadPending:
		return decodeEventAs[DownloadPending](k, body)
	case KindDownloadCompleted:
		return decodeEventAs[DownloadCompleted](k, body)
	case KindDownloadFailed:
		return decodeEventAs[DownloadFailed](k, body)
	case KindTracingSet:
		return decodeEventAs[TracingSet](k, body)
	case KindMasterElected:
		return decodeEventAs[MasterElected](k, body)
	case KindAPIKeysSet:
		return decodeEventAs[APIKeysSet](k, body)
	case KindModelAdded:
		return decodeEventAs[ModelAdded](k, body)
	case KindModelRemoved:
		return decodeEventAs[ModelRemoved](k, body)
	case KindAPIKeyAdded:
		return decodeEventAs[APIKeyAdded](k, body)
	case KindAPIKeyRemoved:
		return decodeEventAs[APIKeyRemoved](k, body)
	}
	return nil, &UnknownKindError{Kind: k, Want: "event"}
}

func decodeEventAs[T Event](k Kind, body []byte) (Event, error) {
	var e T
	if err := cborBody("event", k, body, &e); err != nil {
		return nil, err
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e, nil
}

func decodeCommandBody(k Kind, body []byte) (Command, error) {
	switch k {
	case KindPlaceInstance:
		return decodeCommandAs[PlaceInstance](k, body)
	case KindCreateInstance:
		return decodeCommandAs[CreateInstance](k, body)
	case KindDeleteInstance:
		return decodeCommandAs[DeleteInstance](k, body)
	case KindSetTracingEnabled:
		return decodeCommandAs[SetTracingEnabled](k, body)
	case KindRefuseInstancePlacement:
		return decodeCommandAs[RefuseInstancePlacement](k, body)
	case KindFailInstance:
		return decodeCommandAs[FailInstance](k, body)
	case KindAddModel:
		return decodeCommandAs[AddModel](k, body)
	case KindRemoveModel:
		return decodeCommandAs[RemoveModel](k, body)
	case KindAddAPIKey:
		return decodeCommandAs[AddAPIKey](k, body)
	case KindRemoveAPIKey:
		return decodeCommandAs[RemoveAPIKey](k, body)
	}
	return nil, &UnknownKindError{Kind: k, Want: "command"}
}

func decodeCommandAs[T Command](k Kind, body []byte) (Command, error) {
	var c T
	if err := cborBody("command", k, body, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}
