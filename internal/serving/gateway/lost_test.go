package gateway

import (
	"errors"
	"testing"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

func TestWithoutLost(t *testing.T) {
	inst := func(status state.InstanceStatus, nodes ...ids.NodeID) state.Instance {
		var p []event.Shard
		for _, n := range nodes {
			p = append(p, event.Shard{Node: n})
		}
		return state.Instance{Model: "m", Status: status, Placement: p}
	}
	live := func(nodes ...string) []placement.Node {
		var out []placement.Node
		for _, n := range nodes {
			out = append(out, placement.Node{ID: n})
		}
		return out
	}
	tests := []struct {
		name      string
		instances map[ids.InstanceID]state.Instance
		live      []placement.Node
		kept      int
		lost      bool
	}{
		{"all live", map[ids.InstanceID]state.Instance{"i1": inst(state.InstanceReady, "a", "b")}, live("a", "b"), 1, false},
		{"a rank lost", map[ids.InstanceID]state.Instance{"i1": inst(state.InstanceReady, "a", "b")}, live("a"), 0, true},
		{"another replica serves", map[ids.InstanceID]state.Instance{"i1": inst(state.InstanceReady, "a", "b"), "i2": inst(state.InstanceReady, "a")}, live("a"), 1, false},
		{"the replacement still loads", map[ids.InstanceID]state.Instance{"i1": inst(state.InstanceReady, "b"), "i2": inst(state.InstancePending, "a")}, live("a"), 1, true},
		{"no live view yet", map[ids.InstanceID]state.Instance{"i1": inst(state.InstanceReady, "b")}, nil, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := withoutLost(state.State{Instances: tt.instances}, "m", tt.live)
			if len(st.Instances) != tt.kept {
				t.Errorf("kept %d instances, want %d", len(st.Instances), tt.kept)
			}
			var ie *fault.Error
			if got := errors.As(err, &ie); got != tt.lost {
				t.Fatalf("lost error %v, want %v", err, tt.lost)
			}
			if tt.lost && (ie.Code != "instance_lost" || ie.Class.HTTPStatus() != 503) {
				t.Errorf("error %+v", ie)
			}
		})
	}
}
