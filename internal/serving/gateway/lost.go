package gateway

import (
	"maps"
	"slices"

	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// aliveSet is the set of the live nodes' ids.
func aliveSet(live []placement.Node) map[ids.NodeID]bool {
	alive := make(map[ids.NodeID]bool, len(live))
	for _, n := range live {
		alive[ids.NodeID(n.ID)] = true
	}
	return alive
}

// withoutLost returns st without the instances that have a rank on a node
// gossip no longer shows alive: a request sent there would wait on a dead
// node while the master places the instance again. When that leaves model
// with no instance to serve it, lost says which node was lost and that the
// instance is being placed again (a 503 the client retries), rather than
// "still loading" or a runner's exit status. With no live view yet (the
// membership is starting) st is returned whole.
func withoutLost(st state.State, model ids.ModelID, live []placement.Node) (out state.State, lost error) {
	if len(live) == 0 {
		return st, nil
	}
	alive := aliveSet(live)
	kept := map[ids.InstanceID]state.Instance{}
	servable := false
	for _, id := range slices.Sorted(maps.Keys(st.Instances)) {
		inst := st.Instances[id]
		gone := ids.NodeID("")
		for _, sh := range inst.Placement {
			if !alive[sh.Node] {
				gone = sh.Node
				break
			}
		}
		if gone == "" {
			kept[id] = inst
			servable = servable || (inst.Model == model && inst.Status == state.InstanceReady)
			continue
		}
		if inst.Model == model && inst.Status == state.InstanceReady && lost == nil {
			lost = &fault.Error{Class: fault.ClassUnavailable, Code: "instance_lost",
				Message: "instance " + string(id) + " of " + string(model) + " had a rank on node " + string(gone) +
					", which was lost; the instance is being placed again on the other nodes: retry in a moment"}
		}
	}
	st.Instances = kept
	if servable {
		lost = nil
	}
	return st, lost
}
