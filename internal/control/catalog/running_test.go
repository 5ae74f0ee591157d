package catalog

import (
	"testing"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
)

// TestRunningCharged charges nodes with what the State places on them, at
// the estimate the planner admitted each rank with: a failed instance's
// runners are stopped, a model gone from the catalog still has a runner
// process (charged its floor), and the instance being replaced is left out.
func TestRunningCharged(t *testing.T) {
	builtin, err := BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	cards := func(id ids.ModelID) (Card, bool) { return builtin, id == BuiltinID }
	whole := func(id ids.InstanceID, model ids.ModelID, n ids.NodeID) event.InstanceCreated {
		return event.InstanceCreated{Instance: id, Model: model, Backend: "native-cpu", Layers: 5, ContextTokens: 2048,
			Placement: []event.Shard{{Node: n, LayerStart: 0, LayerEnd: 5, HoldsEmbedding: true, HoldsHead: true}}}
	}
	var s state.State
	for _, ev := range []event.Event{
		event.MasterElected{Node: "node-a", Term: 1},
		event.NodeJoined{Node: "node-a", AtUnixMs: 1}, event.NodeJoined{Node: "node-b", AtUnixMs: 2},
		event.InstanceCreated{Instance: "split", Model: BuiltinID, Backend: "native-cpu", Layers: 5, ContextTokens: 1024,
			Placement: []event.Shard{
				{Node: "node-a", LayerStart: 0, LayerEnd: 3, HoldsEmbedding: true},
				{Node: "node-b", LayerStart: 3, LayerEnd: 5, HoldsHead: true},
			}},
		whole("on-a", BuiltinID, "node-a"),
		whole("failed", BuiltinID, "node-a"),
		event.InstanceFailed{Instance: "failed", Category: event.FailureOutOfMemory, Detail: "test"},
		whole("uncatalogued", "gone-from-the-catalog", "node-b"),
	} {
		if s, err = state.Apply(s, event.IndexedEvent{Term: 1, Index: s.LastIndex + 1, Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	charge := func(start, end int, window int) int64 {
		r := placement.Rank{Start: start, End: end, HoldsEmbedding: start == 0, HoldsHead: end == 5}
		b, err := placement.Charge(builtin.PlacementModel(), r, window)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first, last, all := charge(0, 3, 1024), charge(3, 5, 1024), charge(0, 5, 2048)
	node := func(id string) placement.Node {
		return placement.Node{ID: id, TotalBytes: 16 << 30, AvailableBytes: 8 << 30, Backends: []string{"native-cpu"}}
	}
	nodes := []placement.Node{node("node-a"), node("node-b"), node("node-c")}
	tests := []struct {
		name    string
		skip    ids.InstanceID
		runners []int
		bytes   []int64
	}{
		{"every_running_rank", "", []int{2, 2, 0}, []int64{first + all, last + placement.RunnerOverheadBytes, 0}},
		{"but_the_instance_being_replaced", "split", []int{1, 1, 0}, []int64{all, placement.RunnerOverheadBytes, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := placement.Charged(nodes, Running(s, cards, tt.skip))
			for i, n := range got {
				if n.Runners != tt.runners[i] || n.CommittedBytes != tt.bytes[i] {
					t.Errorf("%s: %d runners, %d bytes; want %d, %d", n.ID, n.Runners, n.CommittedBytes, tt.runners[i], tt.bytes[i])
				}
			}
			if nodes[0].Runners != 0 || nodes[0].CommittedBytes != 0 {
				t.Error("Charged changed its input")
			}
		})
	}
}
