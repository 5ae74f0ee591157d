package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/skulk/skulk/internal/ids"
)

// The JSON form mirrors the CBOR envelope for the HTTP API and debugging.
// Decoding rejects unknown fields and trailing data. Unlike the CBOR form it
// cannot reject duplicate keys (the last wins) and matches field names
// case-insensitively, because encoding/json does; the log never uses it.

type jsonEnvelope struct {
	Kind Kind            `json:"kind"`
	Body json.RawMessage `json:"body"`
}

type jsonIndexedEnvelope struct {
	Term  ids.Term        `json:"term"`
	Index ids.Index       `json:"index"`
	Kind  Kind            `json:"kind"`
	Body  json.RawMessage `json:"body"`
}

// MarshalEventJSON returns the JSON envelope of ev.
func MarshalEventJSON(ev Event) ([]byte, error) {
	if ev == nil {
		return nil, fmt.Errorf("event: encoding a nil event")
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("event: encoding %s as JSON: %w", ev.Kind(), err)
	}
	return json.Marshal(jsonEnvelope{Kind: ev.Kind(), Body: body})
}

// MarshalCommandJSON returns the JSON envelope of c.
func MarshalCommandJSON(c Command) ([]byte, error) {
	if c == nil {
		return nil, fmt.Errorf("event: encoding a nil command")
	}
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("event: encoding %s as JSON: %w", c.Kind(), err)
	}
	return json.Marshal(jsonEnvelope{Kind: c.Kind(), Body: body})
}

// MarshalIndexedJSON returns the JSON form of ie.
func MarshalIndexedJSON(ie IndexedEvent) ([]byte, error) {
	if ie.Event == nil {
		return nil, fmt.Errorf("event: encoding an indexed event without an event")
	}
	body, err := json.Marshal(ie.Event)
	if err != nil {
		return nil, fmt.Errorf("event: encoding %s as JSON: %w", ie.Event.Kind(), err)
	}
	return json.Marshal(jsonIndexedEnvelope{Term: ie.Term, Index: ie.Index, Kind: ie.Event.Kind(), Body: body})
}

// UnmarshalEventJSON strictly decodes a JSON event envelope.
func UnmarshalEventJSON(b []byte) (Event, error) {
	var env jsonEnvelope
	if err := jsonStrict("event", "", b, &env); err != nil {
		return nil, err
	}
	return decodeEventBody(env.Kind, env.Body, jsonBody)
}

// UnmarshalCommandJSON strictly decodes a JSON command envelope.
func UnmarshalCommandJSON(b []byte) (Command, error) {
	var env jsonEnvelope
	if err := jsonStrict("command", "", b, &env); err != nil {
		return nil, err
	}
	return decodeCommandBody(env.Kind, env.Body, jsonBody)
}

// UnmarshalIndexedJSON strictly decodes the JSON form of an indexed event.
func UnmarshalIndexedJSON(b []byte) (IndexedEvent, error) {
	var env jsonIndexedEnvelope
	if err := jsonStrict("indexed event", "", b, &env); err != nil {
		return IndexedEvent{}, err
	}
	ev, err := decodeEventBody(env.Kind, env.Body, jsonBody)
	if err != nil {
		return IndexedEvent{}, err
	}
	ie := IndexedEvent{Term: env.Term, Index: env.Index, Event: ev}
	if err := ie.Validate(); err != nil {
		return IndexedEvent{}, err
	}
	return ie, nil
}

func jsonBody(what string, k Kind, body []byte, v any) error {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return &DecodeError{What: what, Kind: k, Err: fmt.Errorf("body is not an object")}
	}
	return jsonStrict(what, k, body, v)
}

func jsonStrict(what string, k Kind, b []byte, v any) error {
	if len(b) > MaxEncodedBytes {
		return &DecodeError{What: what, Kind: k, Err: fmt.Errorf("%d bytes, limit %d", len(b), MaxEncodedBytes)}
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return &DecodeError{What: what, Kind: k, Err: err}
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return &DecodeError{What: what, Kind: k, Err: fmt.Errorf("trailing data after offset %d", d.InputOffset())}
	}
	return nil
}
