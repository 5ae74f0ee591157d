package dataplane

import (
	"context"
	"log/slog"
)

// Lifecycle event names (spec §40). Each record carries the event name under
// the "event" key plus the identities it concerns, so tests and operators
// follow progress without parsing messages.
const (
	EventRingLeased        = "ring_leased"
	EventRingLeaseQueued   = "ring_lease_queued"
	EventRingLeaseRejected = "ring_lease_rejected"
	EventRingReleased      = "ring_released"
	EventRingQuiesced      = "ring_quiesced"
	EventEdgeProvision     = "edge_provision_started"
	EventEdgeReady         = "edge_ready"
	EventStreamClosed      = "stream_closed"
	EventStreamFault       = "stream_fault"
	EventPumpStopped       = "pump_stopped"
	EventObjectLoaded      = "object_loaded"
	EventObjectProduced    = "object_produced"
	EventObjectFailed      = "object_failed"
	EventEdgeStopped       = "edge_stopped"
)

// Identity is who emits events: the run (instance) and the node.
type Identity struct {
	Run  string
	Node NodeID
}

// observer stamps identities on lifecycle records.
type observer struct {
	log *slog.Logger
}

func newObserver(l *slog.Logger, id Identity) observer {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return observer{log: l.With(slog.String("run_id", id.Run), slog.String("node_id", string(id.Node)))}
}

func (o observer) emit(level slog.Level, event string, attrs ...slog.Attr) {
	if !o.log.Enabled(context.Background(), level) {
		return
	}
	o.log.LogAttrs(context.Background(), level, event, append([]slog.Attr{slog.String("event", event)}, attrs...)...)
}

func edgeAttr(e EdgeID) slog.Attr      { return slog.Uint64("edge_id", uint64(e)) }
func ringAttr(r RingID) slog.Attr      { return slog.Uint64("ring_id", uint64(r)) }
func objectAttr(o ObjectID) slog.Attr  { return slog.Uint64("object_id", uint64(o)) }
func sequenceAttr(s uint64) slog.Attr  { return slog.Uint64("sequence", s) }
func reasonAttr(r string) slog.Attr    { return slog.String("reason", r) }
func componentAttr(c string) slog.Attr { return slog.String("component", c) }
func errAttr(err error) slog.Attr      { return slog.String("error", err.Error()) }
