package node

import (
	"context"
	"time"

	"github.com/skulk/skulk/internal/models/library"
	"github.com/skulk/skulk/internal/observe/dashboard"
	"github.com/skulk/skulk/internal/observe/metrics"
	"github.com/skulk/skulk/internal/observe/telemetry"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/api"
	"github.com/skulk/skulk/internal/serving/diagnostics"
	"github.com/skulk/skulk/internal/serving/request"
)

// The node's observers (its metrics, its dashboard's frames, its
// diagnostics) read its parts through the closures built here.

// metricsReadTimeout bounds what one scrape waits for the control plane.
const metricsReadTimeout = time.Second

// watchMetrics hands the node's metrics the readings a scrape gathers: the
// log position and role, the membership, the instances with this node's
// requests in flight, and the runners.
func (n *fabric) watchMetrics() {
	n.metrics.Watch(metrics.Readings{
		Position: func() (uint64, uint64, bool) {
			p := n.ctl.Position()
			return uint64(p.Index), uint64(p.Term), p.MasterOf > 0
		},
		Members: func() int { return len(n.mem.Members()) },
		Refused: func() int { return len(n.refused.All()) },
		Instances: func() []metrics.Instance {
			ctx, cancel := context.WithTimeout(context.Background(), metricsReadTimeout)
			defer cancel()
			st, err := n.ctl.State(ctx)
			if err != nil {
				return nil // between roles: the series return with the next scrape
			}
			inflight := n.gw.Inflight()
			out := make([]metrics.Instance, 0, len(st.Instances))
			for id, inst := range st.Instances {
				out = append(out, metrics.Instance{ID: string(id), Model: string(inst.Model), InFlight: inflight[id]})
			}
			return out
		},
		Runners: func() []metrics.Runner {
			rs := n.worker.Runners()
			out := make([]metrics.Runner, 0, len(rs))
			for _, r := range rs {
				rss, _ := telemetry.ResidentBytes(r.Pid)
				out = append(out, metrics.Runner{Instance: string(r.Instance), Model: string(r.Model), Rank: r.Rank, Restarts: r.Restarts, ResidentBytes: rss})
			}
			return out
		},
	})
}

// observeRequest counts an answered API request. The model label is the
// model the client named only when the catalog knows it, so a client
// cannot grow the metrics with made-up names.
func (n *fabric) observeRequest(s api.Served) {
	model := s.Model
	if _, ok := n.mods.Card(ids.ModelID(model)); !ok {
		model = ""
	}
	route := s.Route
	if route == "" {
		route = "unmatched"
	}
	n.metrics.Request(route, model, s.Status, s.Duration)
}

// dashboardSources are the documents of the dashboard's frames.
func (n *fabric) dashboardSources() dashboard.Sources {
	return dashboard.Sources{
		Self: dashboard.SelfFrame{Node: n.id, Version: SoftwareVersion, Commit: SoftwareCommit, Chat: dashboard.ChatDefaults{
			MaxTokens: request.ChatReplyTokens, Temperature: request.DefaultTemperature, TopP: request.DefaultTopP}},
		State:   func(ctx context.Context) (any, error) { return n.gw.State(ctx) },
		Cluster: n.gw.Diagnostics,
		Nodes: func(ctx context.Context) any {
			return diagnostics.NodeReadings(ctx, n.diag, n.peers.nodes, n.mods.Card)
		},
		Downloads: func() any { return library.ClusterDownloads(n.peers.get)() },
		Timeline:  func() any { return n.timeline.Latest(dashboard.TimelineEntries) },
		Departed:  func() any { return n.timeline.Departed(dashboard.DepartedWindow) },
		Activity: func() (dashboard.Activity, error) {
			a, err := n.metrics.Activity()
			return dashboard.Activity{GeneratedTokens: a.GeneratedTokens, InFlight: a.InFlight}, err
		},
	}
}

// nodeDiagnostics answers GET /v1/diagnostics/node.
func (n *fabric) nodeDiagnostics() func(context.Context) (any, error) {
	return diagnostics.Node(diagnostics.NodeFacts{Self: n.id, Name: n.cfg.NodeName(), Version: SoftwareVersion, Commit: SoftwareCommit, Started: n.started,
		Threads: n.cfg.Threads, MaxInstances: n.cfg.MaxInstances, MemoryBudget: n.cfg.MemoryBudget, KernelCap: n.cfg.Engine.Kernels,
		Plane: n.ctl, Recorders: n.worker.Recorders})
}
