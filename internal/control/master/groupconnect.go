package master

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
)

// DefaultGroupConnectTimeout is how long a split instance may take to come
// up (every rank loaded, every edge connected) before the master tears it
// down and places it again.
const DefaultGroupConnectTimeout = 120 * time.Second

// GroupConnect is the master's readiness barrier for split instances: a
// pipeline serves only once every rank is loaded and every edge between
// them connected (its runners report ready only then), and an instance
// that has not got there within Timeout of being placed (or of last being
// ready) is torn down: the failure history says which
// ranks and edges did not come up, and the instance is placed again
// without the node that kept it from linking. The clock stands still while
// a rank is still fetching its weights: a download is bounded by its own
// checks, not by this one. A one-node instance has no group to connect,
// and a failed one already has its failure recorded (a stage waits for its
// links past the deadline, so a link that cannot connect does not trip
// the crash breaker first).
// Like NodeLoss it runs for one leadership.
type GroupConnect struct {
	Self    ids.NodeID
	Timeout time.Duration // 0: DefaultGroupConnectTimeout
	// Link says what node from, that of the link's sending rank, reports
	// about it (its state and latest error); "" when nothing arrived. Link
	// k runs from rank k to rank k+1 mod ranks.
	Link   func(from ids.NodeID, inst ids.InstanceID, link int) (state, detail string)
	NewID  func() string
	Now    func() time.Time
	Logger *slog.Logger
}

// Run watches until ctx ends (the leadership ends).
func (g GroupConnect) Run(ctx context.Context, m *Master) {
	if g.Timeout <= 0 {
		g.Timeout = DefaultGroupConnectTimeout
	}
	since := map[ids.InstanceID]time.Time{}
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
		now := g.Now()
		for id := range since {
			if _, ok := st.Instances[id]; !ok {
				delete(since, id)
			}
		}
		for _, id := range st.InstanceIDs() {
			inst := st.Instances[id]
			if len(inst.Placement) < 2 || inst.Status != state.InstancePending || downloading(inst) {
				delete(since, id)
				continue
			}
			start, ok := since[id]
			if !ok {
				since[id] = now
				continue
			}
			if now.Sub(start) < g.Timeout {
				continue
			}
			delete(since, id)
			g.replace(ctx, m, id, inst, now.Sub(start))
		}
	}
}

func downloading(inst state.Instance) bool {
	return slices.ContainsFunc(inst.Runners, func(r state.Runner) bool { return r.Status == event.RunnerDownloading })
}

// replace tears the instance down and places it again, in one entry.
func (g GroupConnect) replace(ctx context.Context, m *Master, id ids.InstanceID, inst state.Instance, waited time.Duration) {
	detail, blame := g.diagnose(id, inst, waited)
	g.Logger.Warn("split instance did not come up in time; placing it again", "instance", id, "model", inst.Model, "reason", detail)
	src := event.Source{Role: event.RoleMaster, Node: g.Self}
	excluded := slices.Clone(inst.ExcludedNodes)
	if blame != "" && !slices.Contains(excluded, blame) {
		excluded = append(excluded, blame)
	}
	out, err := m.Batch(ctx, []Step{
		{Try: []event.Command{event.FailInstance{ID: ids.CommandID(g.NewID()), Instance: id, Node: g.Self,
			Category: event.FailureGroupConnect, Detail: truncate(detail)}}, Required: true},
		{Source: src, Fact: event.InstanceDeleted{Instance: id, Reason: event.DeleteFailed}, Required: true},
		{Try: replacement(inst, excluded, g.NewID)},
	})
	if err != nil {
		g.Logger.Warn("group connect: could not tear the instance down", "instance", id, "err", err)
		return
	}
	if err := out[2].Err; err != nil {
		g.Logger.Warn("group connect: could not place the model again", "model", inst.Model, "excluded", excluded, "err", err)
		return
	}
	g.Logger.Info("placed a split instance again", "model", inst.Model, "old", id, "instance", placedInstance(out[2].Events))
}

// diagnose says which ranks and edges did not come up, and which node the
// re-placement leaves out: the node of the first rank that is not serving
// when no edge report says more; otherwise, for the first edge not
// connected, its receiving node when the sending node reports it waiting
// (it could not reach it, or the receiving runner never linked), or its
// sending node when that one reports nothing (its runner never reached
// its edges).
func (g GroupConnect) diagnose(id ids.InstanceID, inst state.Instance, waited time.Duration) (string, ids.NodeID) {
	n := len(inst.Placement)
	var parts []string
	var blame ids.NodeID
	for r, run := range inst.Runners {
		if run.Status.Serving() {
			continue
		}
		p := fmt.Sprintf("rank %d (node %s, layers [%d, %d)) %s", r, inst.Placement[r].Node, inst.Placement[r].LayerStart, inst.Placement[r].LayerEnd, run.Status)
		if run.Reason != "" {
			p += ": " + run.Reason
		}
		parts = append(parts, p)
		if blame == "" {
			blame = inst.Placement[r].Node
		}
	}
	edgeBlamed := false
	for k := range n {
		from, to := inst.Placement[k].Node, inst.Placement[(k+1)%n].Node
		st, detail := "", ""
		if g.Link != nil {
			st, detail = g.Link(from, id, k)
		}
		if st == "connected" {
			continue
		}
		p := fmt.Sprintf("edge %d (rank %d on %s → rank %d on %s) ", k, k, from, (k+1)%n, to)
		switch {
		case st == "":
			p += "never started: rank " + fmt.Sprint(k) + "'s runner did not link"
		default:
			p += st
		}
		if detail != "" {
			p += ": " + detail
		}
		parts = append(parts, p)
		if !edgeBlamed {
			edgeBlamed = true
			if st == "" {
				blame = from
			} else {
				blame = to
			}
		}
	}
	return fmt.Sprintf("not ready %s after placement: %s", waited.Round(time.Second), strings.Join(parts, "; ")), blame
}
