package node

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/observe/dashboard"
	"github.com/skulk/skulk/internal/observe/metrics"
	"github.com/skulk/skulk/internal/observe/telemetry"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Dashboard stream bounds.
const (
	// dashboardReadTimeout bounds one reading of the frames.
	dashboardReadTimeout = 2 * time.Second
	// activityHistory is how much of the tokens/s history the Activity
	// frame carries: the page shows it as a chart from its first frame.
	activityHistory = 5 * time.Minute
	// activityStep is the chart's resolution: one sample per step keeps
	// the frame small (60 samples) while it is sent every second.
	activityStep = 5 * time.Second
	// dashboardTimeline is how many of the latest timeline entries the
	// timeline frame carries.
	dashboardTimeline = 60
)

// NodeReading is one member's live telemetry in the nodes frame.
type NodeReading struct {
	Node           ids.NodeID    `json:"node"`
	TotalBytes     int64         `json:"total_bytes"`
	AvailableBytes int64         `json:"available_bytes"`
	MemoryBudget   int64         `json:"memory_budget,omitempty"`
	MaxInstances   int           `json:"max_instances,omitempty"`
	Backends       []string      `json:"backends"`
	CPU            telemetry.CPU `json:"cpu"`
	Kernels        string        `json:"kernels,omitempty"`
	// CommittedBytes and Runners are what the State's placements hold on
	// the node, charged as the master's planner charges them.
	CommittedBytes int64 `json:"committed_bytes"`
	Runners        int   `json:"runners"`
	// RTTms is the latest probe round trip from the node to each peer it
	// probed, in milliseconds.
	RTTms map[ids.NodeID]float64 `json:"rtt_ms,omitempty"`
}

// rttKey is the telemetry key of a node's link round trips.
const rttKey = "rtt"

// rttReading encodes round trips for the rtt reading: milliseconds by peer,
// the nearest peers first until the reading's size limit (about eleven).
func rttReading(rtts map[ids.NodeID]time.Duration) []byte {
	peers := slices.Collect(maps.Keys(rtts))
	slices.SortFunc(peers, func(a, b ids.NodeID) int { return cmp.Compare(rtts[a], rtts[b]) })
	out := map[ids.NodeID]float64{}
	for _, p := range peers {
		out[p] = math.Round(float64(rtts[p].Microseconds())) / 1000
		if b, _ := json.Marshal(out); len(b) > membership.MaxReadingValue {
			delete(out, p)
			break
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// ActivitySample is the generation rate over one interval.
type ActivitySample struct {
	At           time.Time `json:"at"`
	TokensPerSec float64   `json:"tokens_per_sec"`
}

// ActivityFrame is the activity frame: this node's requests in flight per
// instance and its generated tokens per second over the last minutes, read
// from its metrics registry (the numbers GET /metrics serves).
type ActivityFrame struct {
	InFlight        map[string]float64 `json:"in_flight"`
	GeneratedTokens float64            `json:"generated_tokens"`
	Samples         []ActivitySample   `json:"samples"`
}

// SelfFrame names the node serving the page.
type SelfFrame struct {
	Node    ids.NodeID `json:"node"`
	Version string     `json:"version"`
	Commit  string     `json:"commit"`
}

// dashboardFrames returns the broker's reading of the node: the GET /state
// document, the cluster diagnostics (roles, reachability, addresses), the
// members' telemetry, the downloads in progress, the activity and the
// latest timeline entries. The broker calls it on its one goroutine, which
// thereby owns the activity sampler.
func (n *fabric) dashboardFrames(act *activitySampler) func(ctx context.Context) []dashboard.Frame {
	return func(ctx context.Context) []dashboard.Frame {
		ctx, cancel := context.WithTimeout(ctx, dashboardReadTimeout)
		defer cancel()
		frames := []dashboard.Frame{{Name: "self", Doc: SelfFrame{Node: n.id, Version: SoftwareVersion, Commit: SoftwareCommit}}}
		// Between roles the control plane answers nothing: the page keeps
		// the last State it had.
		if st, err := n.gw.State(ctx); err == nil {
			frames = append(frames, dashboard.Frame{Name: "state", Doc: st})
		}
		if d, err := n.gw.Diagnostics(ctx); err == nil {
			frames = append(frames, dashboard.Frame{Name: "cluster", Doc: d})
		}
		now := time.Now()
		tl := n.timeline.since(now.Add(-DefaultTimelineMinutes * time.Minute))
		if len(tl) > dashboardTimeline {
			tl = tl[len(tl)-dashboardTimeline:]
		}
		return append(frames, dashboard.Frame{Name: "nodes", Doc: n.nodeReadings(ctx)},
			dashboard.Frame{Name: "downloads", Doc: clusterDownloads(&n.peers)()},
			dashboard.Frame{Name: "activity", Doc: act.sample(now)},
			dashboard.Frame{Name: "timeline", Doc: Timeline{Events: tl}})
	}
}

// activitySampler keeps the tokens/s history of the activity frame. Only
// the dashboard broker's goroutine uses it: on each reading of the frames,
// and on its idle ticks, so the chart has its history when a page opens.
type activitySampler struct {
	read       func() (metrics.Activity, error)
	log        *slog.Logger
	samples    []ActivitySample
	lastTokens float64
	lastAt     time.Time
}

// sample reads the metrics, adds a sample when a step has passed, and
// returns the activity frame.
func (a *activitySampler) sample(now time.Time) ActivityFrame {
	m, err := a.read()
	if err != nil {
		a.log.Debug("dashboard activity", "err", err)
	}
	switch {
	case a.lastAt.IsZero():
		a.lastTokens, a.lastAt = m.GeneratedTokens, now
	case now.Sub(a.lastAt) >= activityStep:
		rate := max(0, m.GeneratedTokens-a.lastTokens) / now.Sub(a.lastAt).Seconds()
		a.samples = append(a.samples, ActivitySample{At: now.Truncate(time.Second), TokensPerSec: rate})
		a.lastTokens, a.lastAt = m.GeneratedTokens, now
	}
	for len(a.samples) > 0 && now.Sub(a.samples[0].At) > activityHistory {
		a.samples = a.samples[1:]
	}
	return ActivityFrame{InFlight: m.InFlight, GeneratedTokens: m.GeneratedTokens, Samples: slices.Clone(a.samples)}
}

// idle samples the activity while no page watches (every step, not every
// tick: a metrics gather is not free).
func (a *activitySampler) idle(context.Context) {
	if now := time.Now(); now.Sub(a.lastAt) >= activityStep {
		a.sample(now)
	}
}

// nodeReadings is every live member's latest resources reading.
func (n *fabric) nodeReadings(ctx context.Context) []NodeReading {
	out := []NodeReading{}
	m := n.peers.get()
	if m == nil {
		return out
	}
	charged := map[string]placement.Node{}
	if st, err := n.ctl.State(ctx); err == nil {
		for _, c := range placement.Charged(n.peers.nodes(), catalog.Running(st, n.mods.card, "")) {
			charged[c.ID] = c
		}
	}
	rtt := map[ids.NodeID]map[ids.NodeID]float64{}
	for _, r := range m.Readings() {
		if r.Key != rttKey {
			continue
		}
		var v map[ids.NodeID]float64
		if json.Unmarshal(r.Value, &v) == nil {
			rtt[r.Node] = v
		}
	}
	for _, r := range m.Readings() {
		if r.Key != resourcesKey {
			continue
		}
		var v resources
		if json.Unmarshal(r.Value, &v) != nil {
			continue
		}
		out = append(out, NodeReading{Node: r.Node, TotalBytes: v.TotalBytes, AvailableBytes: v.AvailableBytes, MemoryBudget: v.MemoryBudget,
			MaxInstances: v.MaxInstances, Backends: v.Backends, CPU: v.CPU, Kernels: v.Kernels,
			CommittedBytes: charged[string(r.Node)].CommittedBytes, Runners: charged[string(r.Node)].Runners, RTTms: rtt[r.Node]})
	}
	return out
}
