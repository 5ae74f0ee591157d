package state

import (
	"testing"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// replay applies events at consecutive indices from s, all at the term of
// the latest MasterElected (or s.Term), failing the test on any rejection.
func replay(t *testing.T, s State, evs ...event.Event) State {
	t.Helper()
	for _, ev := range evs {
		var err error
		s, err = Apply(s, next(s, ev))
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	return s
}

// next positions ev right after s.
func next(s State, ev event.Event) event.IndexedEvent {
	term := s.Term
	if me, ok := ev.(event.MasterElected); ok {
		term = me.Term
	}
	return event.IndexedEvent{Term: term, Index: s.LastIndex + 1, Event: ev}
}

func twoRank(inst ids.InstanceID, model ids.ModelID, a, b ids.NodeID) event.InstanceCreated {
	return event.InstanceCreated{
		Instance: inst, Model: model, Backend: "native-cpu",
		Placement: []event.Shard{
			{Node: a, LayerStart: 0, LayerEnd: 4, HoldsEmbedding: true},
			{Node: b, LayerStart: 4, LayerEnd: 8, HoldsHead: true},
		},
		Layers: 8, ContextTokens: 4096, CreatedAtUnixMs: 1000,
	}
}

func ready(inst ids.InstanceID, rank uint32, node ids.NodeID) event.RunnerStatusUpdated {
	return event.RunnerStatusUpdated{Runner: ids.RunnerID("r-" + string(inst) + "-" + string(node)), Instance: inst,
		Rank: rank, Node: node, Status: event.RunnerReady}
}

// retired is a task event of a log written while requests went through the
// control plane.
func retired(k event.Kind) event.RetiredTask {
	return event.RetiredTask{Retired: k, Body: []byte{0xa0}}
}

// base is a cluster with master a at term 1, nodes a, b, c, and instance i1
// of model m on (a, b) with both runners ready, then an old log's task
// event, which changes nothing.
func base(t *testing.T) State {
	t.Helper()
	return replay(t, State{},
		event.MasterElected{Node: "a", Term: 1},
		event.NodeJoined{Node: "a", AtUnixMs: 1},
		event.NodeJoined{Node: "b", AtUnixMs: 2},
		event.NodeJoined{Node: "c", AtUnixMs: 3},
		twoRank("i1", "m", "a", "b"),
		ready("i1", 0, "a"),
		ready("i1", 1, "b"),
		retired(event.KindTaskCreated),
	)
}

// card is a minimal replicated card of model with layers blocks.
func card(model ids.ModelID, layers int64) event.ModelCard {
	return event.ModelCard{ID: model, Arch: "llama", Layers: layers, HiddenSize: 64, KVHeads: 2, HeadDim: 32,
		ContextLength: 2048, StorageBytes: layers << 20, LayerBytes: make([]int64, layers), Tasks: []string{"text-generation"}}
}
