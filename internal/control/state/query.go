package state

import (
	"cmp"
	"slices"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Read-only views. Each returns fresh slices in a deterministic order
// (sorted by id), so callers may keep or modify them.

// ShardRef is one rank of one instance.
type ShardRef struct {
	Instance ids.InstanceID
	Rank     int
	Shard    event.Shard
}

// NodeIDs returns the known nodes, sorted.
func (s State) NodeIDs() []ids.NodeID { return sortedKeys(s.Nodes) }

// InstanceIDs returns the instance ids in sorted order.
func (s State) InstanceIDs() []ids.InstanceID { return sortedKeys(s.Instances) }

// ShardsOnNode returns every rank placed on node: what its worker must run.
func (s State) ShardsOnNode(node ids.NodeID) []ShardRef {
	var out []ShardRef
	for _, id := range sortedKeys(s.Instances) {
		for r, sh := range s.Instances[id].Placement {
			if sh.Node == node {
				out = append(out, ShardRef{Instance: id, Rank: r, Shard: sh})
			}
		}
	}
	return out
}

// InstancesOnNode returns the instances with a rank on node, sorted.
func (s State) InstancesOnNode(node ids.NodeID) []ids.InstanceID {
	var out []ids.InstanceID
	for _, ref := range s.ShardsOnNode(node) {
		out = append(out, ref.Instance) // a node holds at most one rank per instance
	}
	return out
}

// ReadyInstancesForModel returns the ready instances serving model, sorted.
func (s State) ReadyInstancesForModel(model ids.ModelID) []ids.InstanceID {
	var out []ids.InstanceID
	for _, id := range sortedKeys(s.Instances) {
		if inst := s.Instances[id]; inst.Model == model && inst.Status == InstanceReady {
			out = append(out, id)
		}
	}
	return out
}

// RunnersOfInstance returns a copy of the instance's runners by rank, and
// false when the instance is unknown.
func (s State) RunnersOfInstance(id ids.InstanceID) ([]Runner, bool) {
	inst, ok := s.Instances[id]
	return slices.Clone(inst.Runners), ok
}

// RunnersRestarted returns, for every rank on node whose runner the State
// records as live, the report that this runner is stopped because its node
// restarted: a new process on node runs none of its predecessor's runners,
// and no task may be routed to them while their replacements load.
func (s State) RunnersRestarted(node ids.NodeID) []event.RunnerStatusUpdated {
	var out []event.RunnerStatusUpdated
	for _, sh := range s.ShardsOnNode(node) {
		runners := s.Instances[sh.Instance].Runners
		if sh.Rank >= len(runners) {
			continue
		}
		r := runners[sh.Rank]
		if r.ID == "" || r.Status.Terminal() {
			continue
		}
		out = append(out, event.RunnerStatusUpdated{Runner: r.ID, Instance: sh.Instance, Rank: uint32(sh.Rank),
			Node: node, Status: event.RunnerStopped, Reason: "the node restarted"})
	}
	return out
}

// DownloadOf returns the durable download state of model on node.
func (s State) DownloadOf(node ids.NodeID, model ids.ModelID) (Download, bool) {
	d, ok := s.Nodes[node].Downloads[model]
	return d, ok
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
