package diagnostics

import (
	"encoding/json"
	"time"

	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/control/plane"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/observe/telemetry"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/gateway"
)

// Health overlays the live readings on the State for GET /state: a node is
// healthy when it is a reachable member of this node's network version
// whose resource readings keep arriving; its health is an error when what
// it decides is not kept (a store that stopped writing, history its log
// lost), as its persistence reading says (this node's own, first hand).
func Health(s Sources, fresh *telemetry.Freshness) func(st state.State) map[ids.NodeID]gateway.NodeHealth {
	self := s.Self
	return func(st state.State) map[ids.NodeID]gateway.NodeHealth {
		out := map[ids.NodeID]gateway.NodeHealth{}
		m := s.Membership()
		if m == nil {
			return out
		}
		persist := persistReadings(m.Readings())
		persist[self] = s.Own.reading()
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
			case telemetry.ResourcesKey:
				hasRes[r.Node] = true
				resFresh[r.Node] = fresh.Observe(string(r.Node), r.Key, r.Version, now)
			case plane.PositionKey:
				var pos plane.Position
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
			if v, ok := version[n]; ok && n != self && v != s.Version {
				reasons = append(reasons, "version_mismatch")
			}
			issues := persist[n].issues()
			if persist[n].Log != nil || persist[n].Journal != nil {
				reasons = append(reasons, "persistence_degraded")
			}
			if persist[n].Lost != nil {
				reasons = append(reasons, "history_lost")
			}
			if reasons == nil {
				reasons = []string{}
			}
			h := gateway.NodeHealth{Healthy: len(reasons) == 0, Status: gateway.HealthOK, Reasons: reasons, Persistence: issues}
			switch {
			case len(issues) > 0:
				h.Status = gateway.HealthError
			case !h.Healthy:
				h.Status = gateway.HealthUnhealthy
			}
			out[n] = h
		}
		return out
	}
}

// persistReadings decodes the members' persistence readings.
func persistReadings(rs []membership.Reading) map[ids.NodeID]persistReading {
	out := map[ids.NodeID]persistReading{}
	for _, r := range rs {
		if r.Key != persistKey {
			continue
		}
		var v persistReading
		if json.Unmarshal(r.Value, &v) == nil {
			out[r.Node] = v
		}
	}
	return out
}
