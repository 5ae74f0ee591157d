package gateway

import (
	"testing"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// TestPickInstance: a request goes to the ready instance of its model with
// the fewest of this node's requests in flight (ties by id); without one,
// the refusal says to wait while the model loads, or to place it.
func TestPickInstance(t *testing.T) {
	var s state.State
	whole := func(id ids.InstanceID, model ids.ModelID) event.InstanceCreated {
		return event.InstanceCreated{Instance: id, Model: model, Backend: "native-cpu", Layers: 5, ContextTokens: 2048,
			Placement: []event.Shard{{Node: "node-a", LayerStart: 0, LayerEnd: 5, HoldsEmbedding: true, HoldsHead: true}}}
	}
	ready := func(id ids.InstanceID) event.RunnerStatusUpdated {
		return event.RunnerStatusUpdated{Runner: ids.RunnerID("r-" + id), Instance: id, Node: "node-a", Status: event.RunnerReady}
	}
	for _, ev := range []event.Event{
		event.MasterElected{Node: "node-a", Term: 1}, event.NodeJoined{Node: "node-a", AtUnixMs: 1},
		whole("ready-1", "m"), ready("ready-1"), whole("ready-2", "m"), ready("ready-2"), whole("loading", "other"),
	} {
		var err error
		if s, err = state.Apply(s, event.IndexedEvent{Term: 1, Index: s.LastIndex + 1, Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name      string
		model     ids.ModelID
		load      map[ids.InstanceID]int
		want      ids.InstanceID
		wantClass fault.Class
	}{
		{"ties_by_id", "m", nil, "ready-1", ""},
		{"the_least_loaded", "m", map[ids.InstanceID]int{"ready-1": 2, "ready-2": 1}, "ready-2", ""},
		{"while_the_model_loads", "other", nil, "", fault.ClassUnavailable},
		{"without_an_instance", "unplaced", nil, "", fault.ClassNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pickInstance(s, tt.model, tt.load)
			if tt.wantClass != "" {
				if fault.ClassOf(err) != tt.wantClass {
					t.Fatalf("got %s, %v; want a refusal of class %s", got, err, tt.wantClass)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}
