package diagnostics

import (
	"context"
	"encoding/json"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/observe/telemetry"
	"github.com/skulk/skulk/internal/platform/ids"
)

// NodeReading is one member's live telemetry in the dashboard's nodes
// frame.
type NodeReading struct {
	Node           ids.NodeID    `json:"node"`
	Name           string        `json:"name,omitempty"`
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

// NodeReadings is every live member's latest resources reading: the
// dashboard's nodes frame. nodes are the members as placement sees them
// and card the catalog, to charge the State's placements as the planner
// does.
func NodeReadings(ctx context.Context, s Sources, nodes func() []placement.Node, card func(ids.ModelID) (catalog.Card, bool)) []NodeReading {
	out := []NodeReading{}
	m := s.Membership()
	if m == nil {
		return out
	}
	charged := map[string]placement.Node{}
	if st, err := s.Plane.State(ctx); err == nil {
		for _, c := range placement.Charged(nodes(), catalog.Running(st, card, "")) {
			charged[c.ID] = c
		}
	}
	rtt := map[ids.NodeID]map[ids.NodeID]float64{}
	for _, r := range m.Readings() {
		if r.Key != telemetry.RTTKey {
			continue
		}
		var v map[ids.NodeID]float64
		if json.Unmarshal(r.Value, &v) == nil {
			rtt[r.Node] = v
		}
	}
	for _, r := range m.Readings() {
		if r.Key != telemetry.ResourcesKey {
			continue
		}
		var v telemetry.Resources
		if json.Unmarshal(r.Value, &v) != nil {
			continue
		}
		out = append(out, NodeReading{Node: r.Node, Name: v.Name, TotalBytes: v.TotalBytes, AvailableBytes: v.AvailableBytes, MemoryBudget: v.MemoryBudget,
			MaxInstances: v.MaxInstances, Backends: v.Backends, CPU: v.CPU, Kernels: v.Kernels,
			CommittedBytes: charged[string(r.Node)].CommittedBytes, Runners: charged[string(r.Node)].Runners, RTTms: rtt[r.Node]})
	}
	return out
}
