package node

import (
	"encoding/json"
	"time"

	"github.com/skulk/skulk/internal/election"
	"github.com/skulk/skulk/internal/gateway"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/state"
	"github.com/skulk/skulk/internal/telemetry"
)

// health overlays the live readings on the State for GET /state: a node is
// healthy when it is a reachable member of this node's network version
// whose resource readings keep arriving.
func health(self ids.NodeID, p *peers, fresh *telemetry.Freshness) func(st state.State) map[ids.NodeID]gateway.NodeHealth {
	return func(st state.State) map[ids.NodeID]gateway.NodeHealth {
		out := map[ids.NodeID]gateway.NodeHealth{}
		m := p.get()
		if m == nil {
			return out
		}
		now := time.Now()
		live := map[ids.NodeID]bool{}
		for _, mem := range m.Members() {
			live[mem.Node] = true
		}
		fresh.Prune(func(n string) bool { return live[ids.NodeID(n)] })
		version := map[ids.NodeID]string{}
		resFresh := map[ids.NodeID]bool{}
		hasRes := map[ids.NodeID]bool{}
		for _, r := range m.Readings() {
			switch r.Key {
			case resourcesKey:
				hasRes[r.Node] = true
				resFresh[r.Node] = fresh.Observe(string(r.Node), r.Key, r.Version, now)
			case election.PositionKey:
				var pos election.Position
				if json.Unmarshal(r.Value, &pos) == nil {
					version[r.Node] = pos.Version
				}
			}
		}
		nodes := map[ids.NodeID]bool{}
		for n := range live {
			nodes[n] = true
		}
		for _, n := range st.NodeIDs() {
			nodes[n] = true
		}
		for n := range nodes {
			var reasons []string
			switch {
			case !live[n]:
				reasons = append(reasons, "unreachable")
			case !hasRes[n]:
				reasons = append(reasons, "telemetry_missing")
			case !resFresh[n]:
				reasons = append(reasons, "telemetry_partial")
			}
			if v, ok := version[n]; ok && n != self && v != SoftwareVersion {
				reasons = append(reasons, "version_mismatch")
			}
			if reasons == nil {
				reasons = []string{}
			}
			out[n] = gateway.NodeHealth{Healthy: len(reasons) == 0, Reasons: reasons}
		}
		return out
	}
}
