package modeladmin

import (
	"slices"
	"testing"

	"github.com/skulk/skulk/internal/catalog"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/state"
)

// TestPlaced: a model's placement is the most advanced state of its
// instances (ready, then pending, then failed), and its instances are
// listed in id order.
func TestPlaced(t *testing.T) {
	inst := func(model string, s state.InstanceStatus) state.Instance {
		return state.Instance{Model: ids.ModelID(model), Status: s}
	}
	st := state.State{Instances: map[ids.InstanceID]state.Instance{
		"i3": inst("a", state.InstanceFailed),
		"i1": inst("a", state.InstancePending),
		"i2": inst("b", state.InstanceFailed),
		"i4": inst("c", state.InstanceReady),
		"i5": inst("c", state.InstancePending),
	}}
	tests := []struct {
		model     string
		placement string
		instances []ids.InstanceID
	}{
		{"a", "pending", []ids.InstanceID{"i1", "i3"}},
		{"b", "failed", []ids.InstanceID{"i2"}},
		{"c", "ready", []ids.InstanceID{"i4", "i5"}},
		{"d", "none", []ids.InstanceID{}},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			e := placed(st, catalog.Card{ID: tt.model})
			if e.ID != tt.model || e.Placement != tt.placement || !slices.Equal(e.Instances, tt.instances) || e.Instances == nil {
				t.Errorf("placed(%s) = %s %v, want %s %v", tt.model, e.Placement, e.Instances, tt.placement, tt.instances)
			}
		})
	}
}
