// Package forward carries what a follower forwards to the Raft leader of
// the control plane: commands to decide and workers' reports, on any
// reliable byte stream (QUIC streams of ALPN skulk/control/1 in a cluster).
// Serve, on the leader, answers; Execute and Report, on a follower, ask.
//
// # Wire format
//
// Every stream starts with a hello frame naming what it is for; frames are
// a 4-byte big-endian length followed by one CBOR map.
//
//	command: hello{op:"command"} frame{command} → frame{events} | frame{err}
//	report:  hello{op:"report"}  frame{report}  → frame{}       | frame{err}
//
// Events and commands travel in their canonical encodings (internal/control/event).
package forward

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/fxamacker/cbor/v2"
	"github.com/skulk/skulk/internal/platform/fault"
)

// MaxFrame bounds one frame; a snapshot is the largest.
const MaxFrame = 256 << 20

// Stream ops.
const (
	opCommand = "command"
	opReport  = "report"
)

type hello struct {
	Op string `cbor:"op"`
}

type frame struct {
	Command []byte     `cbor:"command,omitempty"`
	Report  []byte     `cbor:"report,omitempty"`
	Events  [][]byte   `cbor:"events,omitempty"`
	Err     *wireError `cbor:"err,omitempty"`
}

type wireError struct {
	Code    string `cbor:"code,omitempty"`
	Class   string `cbor:"class"`
	Status  int    `cbor:"status"`
	Message string `cbor:"message"`
}

// ErrFrame reports a frame that breaks the protocol.
var ErrFrame = errors.New("replica: malformed frame")

func writeFrame(w io.Writer, v any) error {
	b, err := cbor.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("replica: frame of %d bytes exceeds %d", len(b), MaxFrame)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func readFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return fmt.Errorf("%w: %d bytes exceeds %d", ErrFrame, n, MaxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("%w: %v", ErrFrame, err)
	}
	if err := cbor.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrFrame, err)
	}
	return nil
}

// statusError is what the planner's refusals implement.
type statusError interface{ HTTPStatus() int }

func toWire(err error) *wireError {
	w := &wireError{Class: string(fault.ClassOf(err)), Message: err.Error()}
	if ie, ok := errors.AsType[*fault.Error](err); ok {
		w.Code = ie.Code
	}
	var se statusError
	var ie *fault.Error
	if errors.As(err, &se) {
		w.Status = se.HTTPStatus()
		if !errors.As(err, &ie) {
			// A refusal that names its status but no class (the planner's):
			// the follower's client must get the same status the master's
			// would, not a 500.
			w.Class = string(fault.ClassOfStatus(w.Status))
		}
	} else {
		w.Status = fault.ClassOf(err).HTTPStatus()
	}
	return w
}

// RemoteError is an error the master returned to a forwarded command. It
// keeps the class (errors.As to *fault.Error) and the HTTP status the
// master's answer would have had.
type RemoteError struct {
	Code    string
	Class   fault.Class
	Status  int
	Message string
}

func (e *RemoteError) Error() string   { return e.Message }
func (e *RemoteError) HTTPStatus() int { return e.Status }
func (e *RemoteError) Unwrap() error {
	return &fault.Error{Class: e.Class, Code: e.Code, Message: e.Message}
}

func fromWire(w *wireError) error {
	return &RemoteError{Code: w.Code, Class: fault.Class(w.Class), Status: w.Status, Message: w.Message}
}
