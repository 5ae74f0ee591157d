package master

import (
	"context"
	"log/slog"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Node lifecycle timings, as named constants.
const (
	// lostAfter is how long a node that the State knows must be absent from
	// the membership before the master declares it gone: the failure
	// detector has already suspected and confirmed it, this only rides out
	// a member flapping.
	lostAfter = time.Second
	// masterSettle is how long after its process started a master waits
	// before declaring any node gone, so a whole-cluster restart can
	// re-form first. A failover in a running cluster does not wait.
	masterSettle = 10 * time.Second
	// lifecycleTick is how often the master compares membership and State.
	lifecycleTick = 300 * time.Millisecond
)

// NodeLoss is the master's duty of keeping the State's node set equal to
// the membership: NodeJoined for new members, and for a node gone longer
// than lostAfter: tear down the instances with a rank on it, NodeLeft, and re-place those instances elsewhere honouring their
// stamped exclusions. It runs for as long as one leadership lasts: the node
// starts it with each master it becomes and its context ends with the term.
type NodeLoss struct {
	Self    ids.NodeID
	Members func() []ids.NodeID // the live members, from the membership
	NewID   func() string
	Now     func() time.Time // the master's clock
	// Started is when this node's process started (masterSettle runs from
	// it).
	Started time.Time
	Logger  *slog.Logger
}

// Run watches until ctx ends (the leadership ends).
func (lc NodeLoss) Run(ctx context.Context, m *Master) {
	start := lc.Started
	if start.IsZero() {
		start = lc.Now()
	}
	absent := map[ids.NodeID]time.Time{}
	src := event.Source{Role: event.RoleMaster, Node: lc.Self}
	tick := time.NewTicker(lifecycleTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st, err := m.State(ctx)
		if err != nil {
			return
		}
		live := map[ids.NodeID]bool{}
		for _, n := range lc.Members() {
			live[n] = true
			if _, ok := st.Nodes[n]; !ok {
				if err := m.Report(ctx, src, event.NodeJoined{Node: n, AtUnixMs: lc.Now().UnixMilli()}); err != nil && ctx.Err() == nil {
					lc.Logger.Warn("could not admit a member", "node", n, "err", err)
				}
			}
		}
		now := lc.Now()
		for _, n := range st.NodeIDs() {
			if live[n] || n == lc.Self {
				delete(absent, n)
				continue
			}
			if _, ok := absent[n]; !ok {
				absent[n] = now
			}
			if now.Sub(absent[n]) < lostAfter || now.Sub(start) < masterSettle {
				continue
			}
			lc.nodeLost(ctx, m, st, n)
			delete(absent, n)
		}
	}
}

// nodeLost removes node n from the State and re-places what ran on it, in
// one entry: no reader sees the instances gone and not yet placed again
// (a request would place one on demand, as if the node were still there
// to exclude nothing).
func (lc NodeLoss) nodeLost(ctx context.Context, m *Master, st state.State, n ids.NodeID) {
	src := event.Source{Role: event.RoleMaster, Node: lc.Self}
	lc.Logger.Warn("node is gone; tearing down what ran on it", "lost", n)
	var steps []Step
	var again []ids.ModelID
	for _, id := range st.InstancesOnNode(n) {
		steps = append(steps, Step{Source: src, Fact: event.InstanceDeleted{Instance: id, Reason: event.DeleteNodeLost}, Required: true})
	}
	steps = append(steps, Step{Source: src, Fact: event.NodeLeft{Node: n, Reason: event.LeaveTimedOut}, Required: true})
	facts := len(steps)
	for _, id := range st.InstancesOnNode(n) {
		inst := st.Instances[id]
		// A split instance whose runners failed while the node was going
		// (its ranks lose their links and restart until the breaker gives
		// up) failed because of the loss: it is placed again too. A whole
		// instance that failed on its own stays failed.
		if inst.Status == state.InstanceFailed && len(inst.Placement) == 1 {
			continue
		}
		steps = append(steps, Step{Try: replacement(inst, inst.ExcludedNodes, lc.NewID)})
		again = append(again, inst.Model)
	}
	out, err := m.Batch(ctx, steps)
	if err != nil {
		if ctx.Err() == nil {
			lc.Logger.Warn("node loss: the teardown did not commit", "lost", n, "err", err)
		}
		return
	}
	for i, d := range out {
		switch {
		case i < facts:
		case d.Err != nil:
			lc.Logger.Warn("could not re-place an instance of a lost node", "model", again[i-facts], "err", d.Err)
		default:
			lc.Logger.Info("re-placed an instance of a lost node", "model", again[i-facts], "instance", placedInstance(d.Events))
		}
	}
}

// replacement is how an instance is placed again without some nodes: as
// wide as before when the others allow (a forced split stays split),
// else as the planner sees fit.
func replacement(inst state.Instance, excluded []ids.NodeID, newID func() string) []event.Command {
	place := func(minNodes int) event.Command {
		return event.PlaceInstance{ID: ids.CommandID(newID()), Model: inst.Model, ExcludedNodes: excluded,
			ContextTokens: inst.ContextTokens, MinNodes: uint32(minNodes), CacheType: inst.CacheType,
			Speculative: inst.Speculative, DraftModel: inst.DraftModel, OnDemand: inst.OnDemand, KeepAliveMs: inst.KeepAliveMs}
	}
	if len(inst.Placement) > 1 {
		return []event.Command{place(len(inst.Placement)), place(0)}
	}
	return []event.Command{place(len(inst.Placement))}
}

// placedInstance names the instance a placement's events created.
func placedInstance(evs []event.IndexedEvent) ids.InstanceID {
	for _, e := range evs {
		if c, ok := e.Event.(event.InstanceCreated); ok {
			return c.Instance
		}
	}
	return ""
}
