package plane

import (
	"context"
	"errors"
	"time"

	"github.com/skulk/skulk/internal/control/consensus"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/forward"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// forwardCommand asks the leader to decide cmd. A leader out of reach
// means nothing was asked: no_quorum, as on a side without a majority.
func (p *Plane) forwardCommand(ctx context.Context, leader ids.NodeID, cmd event.Command) ([]event.IndexedEvent, error) {
	ctx, stop := p.whileLeads(ctx, leader)
	defer stop()
	out, err := forward.Execute(ctx, forward.Dial(p.Dial), leader, cmd)
	return out, p.forwardErr(ctx, err)
}

// forwardReport submits a worker's fact to the leader.
func (p *Plane) forwardReport(ctx context.Context, leader ids.NodeID, ev event.Event) error {
	ctx, stop := p.whileLeads(ctx, leader)
	defer stop()
	return p.forwardErr(ctx, forward.Report(ctx, forward.Dial(p.Dial), leader, ev))
}

// errLeaderChanged cancels a forwarded call whose leader is no longer the
// one this node follows (it died or lost an election): a connection to a
// dead node can look open for seconds.
var errLeaderChanged = errors.New("the leader changed while it had the request")

// whileLeads returns ctx cancelled once this node follows another leader
// than leader.
func (p *Plane) whileLeads(ctx context.Context, leader ids.NodeID) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	id := consensus.RaftID(leader)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if st := p.raft.Status(); st.Lead != id {
					cancel(errLeaderChanged)
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

func (p *Plane) forwardErr(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(context.Cause(ctx), errLeaderChanged):
		return &fault.Error{Class: fault.ClassUnavailable, Code: "commit_unknown",
			Message: "the leader changed while it had the request; it may have taken effect: check the cluster's state before retrying"}
	case errors.Is(err, forward.ErrNotDelivered):
		return p.noQuorum()
	case errors.Is(err, forward.ErrNoAnswer):
		return &fault.Error{Class: fault.ClassUnavailable, Code: "commit_unknown",
			Message: "the leader took the request but did not answer; it may still take effect: check the cluster's state before retrying"}
	}
	return err
}

// AsLeader is the plane as the leader serves forwarded requests: a node
// that does not lead refuses them (nothing was proposed) rather than
// forwarding them again.
func (p *Plane) AsLeader() forward.Master { return leaderOnly{p} }

type leaderOnly struct{ p *Plane }

func (l leaderOnly) Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error) {
	if !l.p.IsMaster() {
		return nil, l.p.noQuorum()
	}
	return l.p.execute(ctx, cmd)
}

func (l leaderOnly) Report(ctx context.Context, src event.Source, ev event.Event) error {
	if !l.p.IsMaster() {
		return l.p.noQuorum()
	}
	return l.p.report(ctx, src, ev)
}
