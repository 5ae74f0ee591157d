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

// nodeLost removes node n from the State and re-places what ran on it.
func (lc NodeLoss) nodeLost(ctx context.Context, m *Master, st state.State, n ids.NodeID) {
	src := event.Source{Role: event.RoleMaster, Node: lc.Self}
	report := func(ev event.Event) {
		if err := m.Report(ctx, src, ev); err != nil && ctx.Err() == nil {
			lc.Logger.Warn("node loss: event refused", "kind", ev.Kind(), "err", err)
		}
	}
	lc.Logger.Warn("node is gone; tearing down what ran on it", "lost", n)
	type replace struct {
		model     ids.ModelID
		excluded  []ids.NodeID
		context   uint32
		ranks     int
		cacheType string
		spec      string
		draft     ids.ModelID
		onDemand  bool
		keepAlive int64
	}
	var again []replace
	insts := st.InstancesOnNode(n)
	for _, id := range insts {
		inst := st.Instances[id]
		report(event.InstanceDeleted{Instance: id, Reason: event.DeleteNodeLost})
		// A split instance whose runners failed while the node was going
		// (its ranks lose their links and restart until the breaker gives
		// up) failed because of the loss: it is placed again too. A whole
		// instance that failed on its own stays failed.
		if inst.Status != state.InstanceFailed || len(inst.Placement) > 1 {
			again = append(again, replace{model: inst.Model, excluded: inst.ExcludedNodes, context: inst.ContextTokens,
				ranks: len(inst.Placement), cacheType: inst.CacheType, spec: inst.Speculative, draft: inst.DraftModel,
				onDemand: inst.OnDemand, keepAlive: inst.KeepAliveMs})
		}
	}
	report(event.NodeLeft{Node: n, Reason: event.LeaveTimedOut})
	for _, r := range again {
		id := ids.CommandID(lc.NewID())
		// As wide as before when the survivors allow (a forced split stays
		// split), else as the planner sees fit.
		_, err := m.Execute(ctx, event.PlaceInstance{ID: id, Model: r.model, ExcludedNodes: r.excluded, ContextTokens: r.context,
			MinNodes: uint32(r.ranks), CacheType: r.cacheType, Speculative: r.spec, DraftModel: r.draft,
			OnDemand: r.onDemand, KeepAliveMs: r.keepAlive})
		if err != nil && r.ranks > 1 {
			id = ids.CommandID(lc.NewID())
			_, err = m.Execute(ctx, event.PlaceInstance{ID: id, Model: r.model, ExcludedNodes: r.excluded, ContextTokens: r.context, CacheType: r.cacheType,
				Speculative: r.spec, DraftModel: r.draft, OnDemand: r.onDemand, KeepAliveMs: r.keepAlive})
		}
		if err != nil {
			lc.Logger.Warn("could not re-place an instance of a lost node", "model", r.model, "err", err)
			continue
		}
		lc.Logger.Info("re-placed an instance of a lost node", "model", r.model, "instance", id)
	}
}
