package telemetry

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Telemetry keys and cadence: the membership gossips each node's readings
// under these keys, republished every Interval.
const (
	ResourcesKey = "res"
	// RTTKey is the telemetry key of a node's link round trips.
	RTTKey   = "rtt"
	Interval = time.Second
)

// Resources is the telemetry reading of a node's capacity.
type Resources struct {
	TotalBytes     int64    `json:"total_bytes"`
	AvailableBytes int64    `json:"available_bytes"`
	Backends       []string `json:"backends"`
	CPU            CPU      `json:"cpu"`
	// MaxInstances is the node's --max-instances: the master's planner
	// must see it, and telemetry is how a node's facts reach the master.
	// Absent (an older node) means the default.
	MaxInstances int `json:"max_instances,omitempty"`
	// MemoryBudget is the node's --memory-budget (0: none). TotalBytes and
	// AvailableBytes are already capped by it.
	MemoryBudget int64 `json:"memory_budget,omitempty"`
	// Kernels is the engine's kernel set the node's runners use, for the
	// dashboard (absent from an older node).
	Kernels string `json:"kernels,omitempty"`
	// Name is the node's name (--name, else its host name), which people
	// see beside its id (absent from an older node).
	Name string `json:"name,omitempty"`
}

// Budgeted caps a memory reading by the node's --memory-budget: placement
// counts on no more than the operator allows, whatever the machine has.
func Budgeted(m Memory, budget int64) Memory {
	if budget > 0 {
		m.TotalBytes = min(m.TotalBytes, budget)
		m.AvailableBytes = min(m.AvailableBytes, budget)
	}
	return m
}

// EncodeRTT encodes round trips for the rtt reading: milliseconds by peer,
// the nearest peers first until the encoding would pass limit bytes (the
// membership's reading limit: about eleven peers).
func EncodeRTT(rtts map[ids.NodeID]time.Duration, limit int) []byte {
	peers := slices.Collect(maps.Keys(rtts))
	slices.SortFunc(peers, func(a, b ids.NodeID) int { return cmp.Compare(rtts[a], rtts[b]) })
	out := map[ids.NodeID]float64{}
	for _, p := range peers {
		out[p] = math.Round(float64(rtts[p].Microseconds())) / 1000
		if b, _ := json.Marshal(out); len(b) > limit {
			delete(out, p)
			break
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// Publisher is what PublishResources reads and where it publishes.
type Publisher struct {
	// Publish gossips one reading (the membership's Publish).
	Publish func(key string, value []byte) error
	// RTTs are the latest probe round trips to the peers, and Limit the
	// largest reading value the membership carries.
	RTTs  func() map[ids.NodeID]time.Duration
	Limit int
	// The node's facts: its backends, --max-instances, --memory-budget and
	// its runners' kernel set.
	Backends     []string
	MaxInstances int
	Budget       int64
	Kernels      string
	Name         string
	Logger       *slog.Logger
}

// PublishResources gossips this node's memory, backends, runner limit,
// name and link round trips every Interval until ctx ends.
func PublishResources(ctx context.Context, p Publisher) {
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		mem, err := ReadMemory()
		if err == nil {
			mem = Budgeted(mem, p.Budget)
			b, _ := json.Marshal(Resources{TotalBytes: mem.TotalBytes, AvailableBytes: mem.AvailableBytes,
				Backends: p.Backends, CPU: ReadCPU(), MaxInstances: p.MaxInstances, MemoryBudget: p.Budget, Kernels: p.Kernels, Name: p.Name})
			if err := p.Publish(ResourcesKey, b); err != nil {
				p.Logger.Warn("cannot publish resources", "err", err)
			}
		}
		if err := p.Publish(RTTKey, EncodeRTT(p.RTTs(), p.Limit)); err != nil {
			p.Logger.Debug("cannot publish link round trips", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
