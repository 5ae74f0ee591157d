package dataplane

import (
	"errors"
	"fmt"
)

// Sentinel conditions callers branch on with errors.Is.
var (
	ErrUnsupported      = errors.New("dataplane: shared-memory data plane requires linux")
	ErrRingClosed       = errors.New("dataplane: ring closed by peer")
	ErrArenaShutdown    = errors.New("dataplane: arena manager shut down")
	ErrStaleGeneration  = errors.New("dataplane: handle belongs to an earlier worker generation")
	ErrNoQuiescence     = errors.New("dataplane: release without quiescence proof")
	ErrUnknownLease     = errors.New("dataplane: no live lease for ring")
	ErrEdgeExists       = errors.New("dataplane: edge already established")
	ErrUnknownEdge      = errors.New("dataplane: unknown edge")
	ErrDriverClosed     = errors.New("dataplane: driver closed")
	ErrInvalidArenaSize = errors.New("dataplane: invalid arena size")
)

// RingFaultReason is the spec §37 ring fault taxonomy.
type RingFaultReason uint8

const (
	UnsupportedRingVersion RingFaultReason = iota + 1
	RingLayoutInvalid
	RingStateInvalid
	DeviceOutOfMemory
	DeviceCopyFailed
	RingSequenceViolation
	RingHeaderMalformed
	WorkerProcessExited
	WorkerShuttingDown
	WorkerInternal
)

var ringFaultNames = [...]string{
	UnsupportedRingVersion: "unsupported_ring_version",
	RingLayoutInvalid:      "ring_layout_invalid",
	RingStateInvalid:       "ring_state_invalid",
	DeviceOutOfMemory:      "device_out_of_memory",
	DeviceCopyFailed:       "device_copy_failed",
	RingSequenceViolation:  "sequence_violation",
	RingHeaderMalformed:    "header_malformed",
	WorkerProcessExited:    "worker_process_exited",
	WorkerShuttingDown:     "worker_shutting_down",
	WorkerInternal:         "worker_internal",
}

func (r RingFaultReason) String() string { return enumName(ringFaultNames[:], int(r)) }

// RingFaultError reports a ring that can no longer be trusted.
type RingFaultError struct {
	Ring   RingID
	Reason RingFaultReason
	Detail string
}

func (e *RingFaultError) Error() string {
	return fmt.Sprintf("dataplane: ring %d fault %s: %s", e.Ring, e.Reason, e.Detail)
}

// ObjectFailure is the spec §37 object failure taxonomy.
type ObjectFailure uint8

const (
	HeaderMalformed ObjectFailure = iota + 1
	UnsupportedObjectVersion
	ExtentExceedsMax
	ExtentAlignmentInvalid
	SequenceViolation
	DeviceAllocationFailed
	ObjectDeviceCopyFailed
	EOFMidObject
)

var objectFailureNames = [...]string{
	HeaderMalformed:          "header_malformed",
	UnsupportedObjectVersion: "unsupported_object_version",
	ExtentExceedsMax:         "extent_exceeds_max",
	ExtentAlignmentInvalid:   "extent_alignment_invalid",
	SequenceViolation:        "sequence_violation",
	DeviceAllocationFailed:   "device_allocation_failed",
	ObjectDeviceCopyFailed:   "device_copy_failed",
	EOFMidObject:             "eof_mid_object",
}

func (o ObjectFailure) String() string { return enumName(objectFailureNames[:], int(o)) }

// ObjectError rejects one object record; HasID is false when the header was
// too broken to trust its object id.
type ObjectError struct {
	Edge     EdgeID
	Object   ObjectID
	HasID    bool
	Sequence uint64
	Reason   ObjectFailure
	Detail   string
}

func (e *ObjectError) Error() string {
	if e.HasID {
		return fmt.Sprintf("dataplane: edge %d object %d seq %d rejected (%s): %s",
			e.Edge, e.Object, e.Sequence, e.Reason, e.Detail)
	}
	return fmt.Sprintf("dataplane: edge %d object rejected (%s): %s", e.Edge, e.Reason, e.Detail)
}

// StreamFaultReason classifies why an edge stream failed.
type StreamFaultReason uint8

const (
	StreamOpenFailed StreamFaultReason = iota + 1
	StreamReadFailed
	StreamWriteFailed
	StreamPreambleInvalid
	StreamDuplicate
	StreamRingFault
	ConnectFailed
)

var streamFaultNames = [...]string{
	StreamOpenFailed:      "open_failed",
	StreamReadFailed:      "read_failed",
	StreamWriteFailed:     "write_failed",
	StreamPreambleInvalid: "preamble_invalid",
	StreamDuplicate:       "duplicate_stream",
	StreamRingFault:       "ring_fault",
	ConnectFailed:         "connect_failed",
}

func (s StreamFaultReason) String() string { return enumName(streamFaultNames[:], int(s)) }

// StreamFaultError reports a failed edge stream.
type StreamFaultError struct {
	Edge   EdgeID
	Reason StreamFaultReason
	Err    error
}

func (e *StreamFaultError) Error() string {
	return fmt.Sprintf("dataplane: edge %d stream fault %s: %v", e.Edge, e.Reason, e.Err)
}

func (e *StreamFaultError) Unwrap() error { return e.Err }

// LeaseRejectedError reports a ring request that can never fit the arena.
type LeaseRejectedError struct {
	Requested uint64
	Ceiling   uint64
	Detail    string
}

func (e *LeaseRejectedError) Error() string {
	return fmt.Sprintf("dataplane: ring lease rejected: %d bytes against ceiling %d: %s",
		e.Requested, e.Ceiling, e.Detail)
}

func enumName(names []string, i int) string {
	if i > 0 && i < len(names) && names[i] != "" {
		return names[i]
	}
	return fmt.Sprintf("unknown(%d)", i)
}
