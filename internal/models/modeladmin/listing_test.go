package modeladmin

import (
	"slices"
	"testing"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
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

// TestHeldBy: the nodes that hold a model are those whose download of it
// completed, sorted; pending and failed ones do not.
func TestHeldBy(t *testing.T) {
	dl := func(s state.DownloadStatus) state.Node {
		return state.Node{Downloads: map[ids.ModelID]state.Download{"m": {Status: s}}}
	}
	st := state.State{Nodes: map[ids.NodeID]state.Node{
		"c": dl(state.DownloadCompleted), "a": dl(state.DownloadCompleted),
		"b": dl(state.DownloadFailed), "d": dl(state.DownloadPending), "e": {},
	}}
	tests := []struct {
		model ids.ModelID
		want  []ids.NodeID
	}{
		{"m", []ids.NodeID{"a", "c"}},
		{"other", nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.model), func(t *testing.T) {
			if got := heldBy(st, tt.model); !slices.Equal(got, tt.want) {
				t.Fatalf("heldBy(%s) = %v, want %v", tt.model, got, tt.want)
			}
		})
	}
}
