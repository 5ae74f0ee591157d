package event

import (
	"errors"
	"fmt"
)

// Sentinels matched (errors.Is) by the typed errors below.
var (
	// ErrUnknownKind is matched by *UnknownKindError.
	ErrUnknownKind = errors.New("event: unknown kind")
	// ErrMalformed is matched by *DecodeError: the bytes are not a
	// well-formed, strictly shaped envelope.
	ErrMalformed = errors.New("event: malformed encoding")
	// ErrInvalid is matched by *InvalidError: the value decoded but breaks
	// its own rules.
	ErrInvalid = errors.New("event: invalid value")
	// ErrNotAdmitted is matched by *AdmissionError.
	ErrNotAdmitted = errors.New("event: not admitted")
)

// UnknownKindError reports a kind tag this version does not know, or a
// command kind where an event was expected (and the reverse).
type UnknownKindError struct {
	Kind Kind
	Want string // "event" or "command"
}

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("event: unknown %s kind %q", e.Want, truncate(string(e.Kind)))
}

// Is makes errors.Is(err, ErrUnknownKind) true.
func (e *UnknownKindError) Is(target error) bool { return target == ErrUnknownKind }

// DecodeError reports bytes that could not be decoded strictly. Err is the
// cause; the codec's own error types (cbor.UnknownFieldError,
// cbor.DupMapKeyError, cbor.ExtraneousDataError) are reachable with
// errors.As.
type DecodeError struct {
	What string // "event", "command", "indexed event"
	Kind Kind   // empty when the envelope itself failed
	Err  error
}

func (e *DecodeError) Error() string {
	if e.Kind != "" {
		return fmt.Sprintf("event: decoding %s %s: %v", e.What, e.Kind, e.Err)
	}
	return fmt.Sprintf("event: decoding %s: %v", e.What, e.Err)
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }

func (e *DecodeError) Unwrap() error { return e.Err }

// InvalidError reports a field that breaks the rules of its Command or Event.
type InvalidError struct {
	Kind  Kind
	Field string
	Err   error
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("event: invalid %s.%s: %v", e.Kind, e.Field, e.Err)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func (e *InvalidError) Unwrap() error { return e.Err }

// AdmissionError reports an event its source may not submit.
type AdmissionError struct {
	Source Source
	Kind   Kind
	Reason string
}

func (e *AdmissionError) Error() string {
	return fmt.Sprintf("event: %s from %s not admitted: %s", e.Kind, e.Source, e.Reason)
}

// Is makes errors.Is(err, ErrNotAdmitted) true.
func (e *AdmissionError) Is(target error) bool { return target == ErrNotAdmitted }

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
