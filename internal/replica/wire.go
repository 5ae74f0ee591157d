// Package replica is the control plane between a master and its followers,
// carried on any reliable byte stream (QUIC streams of ALPN
// skulk/control/1 in a cluster, TCP in tests). It has two halves: Serve, on
// the master, answers a follower's streams; Follower, on every other node,
// keeps a local copy of the log and State in step with the master, serves
// them to its node's worker and API, and forwards commands and worker
// reports to the master.
//
// # Wire format
//
// Every stream starts with a hello frame naming what it is for; frames are
// a 4-byte big-endian length followed by one CBOR map.
//
//	follow:  hello{op:"follow", after, after_term, after_master, fresh} →
//	         [frame{snapshot}] frame{event}…            (until either side closes)
//	command: hello{op:"command"} frame{command} → frame{events} | frame{err}
//	report:  hello{op:"report"}  frame{report}  → frame{}       | frame{err}
//
// Events, commands and snapshots travel in their own canonical encodings
// (internal/event, internal/state), so a follower's log holds the same bytes
// as its master's.
package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/fxamacker/cbor/v2"

	"github.com/skulk/skulk/internal/infer"
)

// MaxFrame bounds one frame; a snapshot is the largest.
const MaxFrame = 256 << 20

// Stream ops.
const (
	opFollow  = "follow"
	opCommand = "command"
	opReport  = "report"
)

type hello struct {
	Op        string `cbor:"op"`
	After     uint64 `cbor:"after"`
	AfterTerm uint64 `cbor:"after_term"`
	// AfterMaster is the master the follower's State names at After.
	AfterMaster string `cbor:"after_master"`
	// Fresh asks for a snapshot whatever the follower's position: a node
	// that was master in a lost partition must not trust its own tail.
	Fresh bool `cbor:"fresh"`
}

type frame struct {
	Snapshot []byte     `cbor:"snapshot,omitempty"`
	Event    []byte     `cbor:"event,omitempty"`
	Command  []byte     `cbor:"command,omitempty"`
	Report   []byte     `cbor:"report,omitempty"`
	Events   [][]byte   `cbor:"events,omitempty"`
	Err      *wireError `cbor:"err,omitempty"`
}

type wireError struct {
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
	w := &wireError{Class: string(infer.ClassOf(err)), Message: err.Error()}
	var se statusError
	var ie *infer.Error
	if errors.As(err, &se) {
		w.Status = se.HTTPStatus()
		if !errors.As(err, &ie) {
			// A refusal that names its status but no class (the planner's):
			// the follower's client must get the same status the master's
			// would, not a 500.
			w.Class = string(infer.ClassOfStatus(w.Status))
		}
	} else {
		w.Status = infer.ClassOf(err).HTTPStatus()
	}
	return w
}

// RemoteError is an error the master returned to a forwarded command. It
// keeps the class (errors.As to *infer.Error) and the HTTP status the
// master's answer would have had.
type RemoteError struct {
	Class   infer.Class
	Status  int
	Message string
}

func (e *RemoteError) Error() string   { return e.Message }
func (e *RemoteError) HTTPStatus() int { return e.Status }
func (e *RemoteError) Unwrap() error   { return &infer.Error{Class: e.Class, Message: e.Message} }

func fromWire(w *wireError) error {
	return &RemoteError{Class: infer.Class(w.Class), Status: w.Status, Message: w.Message}
}
