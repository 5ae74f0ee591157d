package diagnostics

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/control/plane"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Timeline bounds.
const (
	// timelineSize is how many entries the node keeps: the oldest go first.
	timelineSize = 1000
	// DefaultTimelineMinutes is the window of GET
	// /v1/diagnostics/cluster/timeline without ?minutes=; maxTimelineMinutes
	// the widest it accepts (a week).
	DefaultTimelineMinutes = 15
	maxTimelineMinutes     = 7 * 24 * 60
)

// TimelineEntry is one thing that happened in the cluster, as this node saw
// it: a control-plane event, a membership change, or a change of this
// node's role.
type TimelineEntry struct {
	At     time.Time  `json:"at"`
	Kind   string     `json:"kind"`
	Node   ids.NodeID `json:"node,omitempty"`
	Detail string     `json:"detail"`
}

// Timeline is the GET /v1/diagnostics/cluster/timeline document, oldest
// entry first.
type Timeline struct {
	Events []TimelineEntry `json:"events"`
}

// timeline is the node's ring of the latest entries. Three goroutines add
// to it (the membership events loop, the election through recordingRoles,
// the control-plane follower in follow); the API reads it.
type timeline struct {
	now func() time.Time // immutable
	// changed is signalled (coalesced) after each entry: the dashboard's
	// broker redraws on it instead of waiting for its next tick.
	changed chan struct{}

	mu      sync.Mutex // guards the fields below; held only to copy entries
	entries []TimelineEntry
	next    int // where the next entry goes once the ring is full
}

func newTimeline(now func() time.Time) *timeline {
	return &timeline{now: now, changed: make(chan struct{}, 1), entries: make([]TimelineEntry, 0, timelineSize)}
}

// add records an entry at the current time.
func (t *timeline) add(kind string, node ids.NodeID, detail string) {
	e := TimelineEntry{At: t.now(), Kind: kind, Node: node, Detail: detail}
	t.mu.Lock()
	if len(t.entries) < timelineSize {
		t.entries = append(t.entries, e)
	} else {
		t.entries[t.next] = e
		t.next = (t.next + 1) % timelineSize
	}
	t.mu.Unlock()
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// since returns the entries at or after from, oldest first.
func (t *timeline) since(from time.Time) []TimelineEntry {
	t.mu.Lock()
	ordered := append(slices.Clone(t.entries[t.next:]), t.entries[:t.next]...)
	t.mu.Unlock()
	out := []TimelineEntry{}
	for _, e := range ordered {
		if !e.At.Before(from) {
			out = append(out, e)
		}
	}
	// Entries arrive from several goroutines: order them by time, keeping
	// the arrival order of those recorded at the same instant.
	slices.SortStableFunc(out, func(a, b TimelineEntry) int { return a.At.Compare(b.At) })
	return out
}

// Timeline answers GET /v1/diagnostics/cluster/timeline?minutes=N: the
// entries of the last N minutes (0: DefaultTimelineMinutes).
func (t *timeline) Timeline(_ context.Context, minutes int) (any, error) {
	if minutes == 0 {
		minutes = DefaultTimelineMinutes
	}
	if minutes < 0 || minutes > maxTimelineMinutes {
		return nil, fault.ParamErrorf("minutes", "minutes must be between 1 and %d, got %d", maxTimelineMinutes, minutes)
	}
	return Timeline{Events: t.since(t.now().Add(-time.Duration(minutes) * time.Minute))}, nil
}

// membership records a membership change.
func (t *timeline) membership(ev membership.Event) {
	detail := "member " + ev.Kind.String()
	if ev.Gossip.IsValid() {
		detail += " (gossip " + ev.Gossip.String() + ")"
	}
	t.add("Member"+strings.ToUpper(ev.Kind.String()[:1])+ev.Kind.String()[1:], ev.Node, detail)
}

// timelineBackfill is how many of the events before its first
// subscription the timeline picks up.
const timelineBackfill = 32

// follow records the control plane's events until ctx ends, subscribing
// again across role switches from the last index it saw. Task events, one
// per request, are left out: they would crowd the ring.
func (t *timeline) follow(ctx context.Context, ctl *plane.Plane) {
	var last ids.Index
	for ctx.Err() == nil {
		st, err := ctl.State(ctx)
		if err == nil {
			after := st.LastIndex
			switch {
			case last > 0 && last < after:
				after = last // replay what a role switch made us miss, if retained
			case last == 0:
				// The first subscription comes once the node has a role,
				// which may be after the first decisions (a placement
				// right after the election): take the newest few events the
				// control plane still holds too.
				after -= min(after, timelineBackfill)
			}
			var sub <-chan event.IndexedEvent
			if sub, err = ctl.Subscribe(ctx, after); err == nil {
				for ie := range sub {
					if ie.Index <= last {
						continue
					}
					last = ie.Index
					if kind, node, detail, ok := describe(ie); ok {
						t.add(kind, node, detail)
					}
				}
				continue
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// describe words an indexed event for the timeline; false for the events
// it leaves out.
func describe(ie event.IndexedEvent) (kind string, node ids.NodeID, detail string, ok bool) {
	kind = string(ie.Event.Kind())
	switch ev := ie.Event.(type) {
	case event.InstanceCreated:
		nodes := make([]string, len(ev.Placement))
		for i, sh := range ev.Placement {
			nodes[i] = string(sh.Node)
		}
		if len(ev.Placement) > 0 {
			node = ev.Placement[0].Node
		}
		detail = fmt.Sprintf("instance %s of %s placed on %s (%d tokens of context)", ev.Instance, ev.Model, strings.Join(nodes, ", "), ev.ContextTokens)
	case event.InstanceDeleted:
		detail = fmt.Sprintf("instance %s deleted (%s)", ev.Instance, ev.Reason)
	case event.InstanceFailed:
		detail = fmt.Sprintf("instance %s failed (%s): %s", ev.Instance, ev.Category, ev.Detail)
	case event.RunnerStatusUpdated:
		node = ev.Node
		detail = fmt.Sprintf("runner %s of instance %s rank %d %s", ev.Runner, ev.Instance, ev.Rank, ev.Status)
		if ev.Reason != "" {
			detail += ": " + ev.Reason
		}
	case event.NodeJoined:
		node, detail = ev.Node, "node admitted to the cluster"
	case event.NodeLeft:
		node, detail = ev.Node, fmt.Sprintf("node removed from the cluster (%s)", ev.Reason)
	case event.DownloadPending:
		node, detail = ev.Node, fmt.Sprintf("download of %s pending", ev.Model)
	case event.DownloadCompleted:
		node, detail = ev.Node, fmt.Sprintf("download of %s completed (%d bytes)", ev.Model, ev.Bytes)
	case event.DownloadFailed:
		node, detail = ev.Node, fmt.Sprintf("download of %s failed: %s", ev.Model, ev.Reason)
	case event.MasterElected:
		node, detail = ev.Node, fmt.Sprintf("master of term %d", ev.Term)
	case event.TracingSet:
		detail = fmt.Sprintf("tracing enabled: %v", ev.Enabled)
	case event.APIKeysSet:
		node, detail = ev.Node, fmt.Sprintf("the node's API keys set (%d)", len(ev.Keys))
	case event.APIKeyAdded:
		node, detail = ev.Node, fmt.Sprintf("%s API key %s added", ev.Key.Scope, ev.Key.Name)
	case event.APIKeyRemoved:
		detail = fmt.Sprintf("API key %s removed", ev.Name)
	case event.RetiredTask:
		return "", "", "", false
	default:
		detail = "event " + kind
	}
	return kind, node, fmt.Sprintf("%s [index %d, term %d]", detail, ie.Index, ie.Term), true
}

func outcome(detail string, err error) string {
	if err != nil {
		return detail + " failed: " + err.Error()
	}
	return detail
}

// Departure is a node that left the cluster, as the timeline saw it, and
// has not come back since.
type Departure struct {
	Node ids.NodeID `json:"node"`
	// Since is the departure's first entry after the node's last join:
	// the membership declaring it failed or gone, or the master's
	// NodeLeft, whichever this node heard of first.
	Since time.Time `json:"since"`
	// Kind and Detail are the latest of its departure entries (NodeLeft
	// once the master removed it from the State).
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// departed returns the nodes whose latest membership or State entry at or
// after from is a departure (MemberFailed, MemberLeave, NodeLeft) not
// followed by a join (MemberJoin, NodeJoined), by node id.
func (t *timeline) departed(from time.Time) []Departure {
	gone := map[ids.NodeID]*Departure{}
	for _, e := range t.since(from) {
		if e.Node == "" {
			continue
		}
		switch e.Kind {
		case "MemberFailed", "MemberLeave", string(event.KindNodeLeft):
			if d := gone[e.Node]; d != nil {
				d.Kind, d.Detail = e.Kind, e.Detail
			} else {
				gone[e.Node] = &Departure{Node: e.Node, Since: e.At, Kind: e.Kind, Detail: e.Detail}
			}
		case "MemberJoin", string(event.KindNodeJoined):
			delete(gone, e.Node)
		}
	}
	out := make([]Departure, 0, len(gone))
	for _, d := range gone {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Departure) int { return strings.Compare(string(a.Node), string(b.Node)) })
	return out
}
