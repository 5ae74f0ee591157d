package controlplane

import (
	"context"
	"errors"

	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
	"github.com/skulk/skulk/internal/replica"
)

// forwardCommand asks the leader to decide cmd. A leader out of reach
// means nothing was asked: no_quorum, as on a side without a majority.
func (p *Plane) forwardCommand(ctx context.Context, leader ids.NodeID, cmd event.Command) ([]event.IndexedEvent, error) {
	out, err := replica.Execute(ctx, replica.Dial(p.Dial), leader, cmd)
	return out, p.forwardErr(err)
}

// forwardReport submits a worker's fact to the leader.
func (p *Plane) forwardReport(ctx context.Context, leader ids.NodeID, ev event.Event) error {
	return p.forwardErr(replica.Report(ctx, replica.Dial(p.Dial), leader, ev))
}

func (p *Plane) forwardErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, replica.ErrNotDelivered):
		return p.noQuorum()
	case errors.Is(err, replica.ErrNoAnswer):
		return &infer.Error{Class: infer.ClassUnavailable, Code: "commit_unknown",
			Message: "the leader took the request but did not answer; it may still take effect: check the cluster's state before retrying"}
	}
	return err
}

// AsLeader is the plane as the leader serves forwarded requests: a node
// that does not lead refuses them (nothing was proposed) rather than
// forwarding them again.
func (p *Plane) AsLeader() replica.Master { return leaderOnly{p} }

type leaderOnly struct{ p *Plane }

func (l leaderOnly) Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error) {
	if !l.p.IsMaster() {
		return nil, l.p.noQuorum()
	}
	return l.p.Execute(ctx, cmd)
}

func (l leaderOnly) Report(ctx context.Context, src event.Source, ev event.Event) error {
	if !l.p.IsMaster() {
		return l.p.noQuorum()
	}
	return l.p.Report(ctx, src, ev)
}
