package master

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/testkit"
)

const (
	nodeB = ids.NodeID("node-b")
	// other is a second model: the demo card under another id.
	other = ids.ModelID("stories-other")
)

// cards knows the demo model and the same card as other.
func cards(t *testing.T) func(ids.ModelID) (catalog.Card, bool) {
	t.Helper()
	card, err := catalog.BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	return func(id ids.ModelID) (catalog.Card, bool) {
		c := card
		switch id {
		case catalog.BuiltinID:
		case other:
			c.ID = string(other)
		default:
			return catalog.Card{}, false
		}
		return c, true
	}
}

// runnerCharge is the demo model's estimate written out independently of
// the planner: weights + 10% + the 512 MiB floor + fp16 K and V (2 × 2 ×
// kv_heads × head_dim bytes a token a layer) for the window.
func runnerCharge(t *testing.T, layers []int, embedding, head bool, window int) int64 {
	t.Helper()
	c, _ := cards(t)(catalog.BuiltinID)
	var w int64
	for _, l := range layers {
		w += c.LayerBytes[l]
	}
	if embedding {
		w += c.EmbeddingBytes
	}
	if head {
		w += c.HeadBytes
	}
	kv := int64(4*c.KVHeads*c.HeadDim) * int64(len(layers)) * int64(window)
	return w + w/10 + placement.RunnerOverheadBytes + kv
}

// replay applies events after s at consecutive indices.
func replay(t *testing.T, s state.State, evs ...event.Event) state.State {
	t.Helper()
	for _, ev := range evs {
		ie := event.IndexedEvent{Term: s.Term, Index: s.LastIndex + 1, Event: ev}
		if me, ok := ev.(event.MasterElected); ok {
			ie.Term = me.Term
		}
		var err error
		if s, err = state.Apply(s, ie); err != nil {
			t.Fatalf("replay %s: %v", ev.Kind(), err)
		}
	}
	return s
}

// cluster is a State with node and node-b joined.
func cluster(t *testing.T) state.State {
	return replay(t, state.State{},
		event.MasterElected{Node: node, Term: 1},
		event.NodeJoined{Node: node, AtUnixMs: 1},
		event.NodeJoined{Node: nodeB, AtUnixMs: 2})
}

// whole places the whole demo model (5 layers) on n at the card's window.
func whole(id ids.InstanceID, model ids.ModelID, n ids.NodeID) event.InstanceCreated {
	return event.InstanceCreated{Instance: id, Model: model, Backend: "native-cpu", Layers: 5, ContextTokens: 2048,
		Placement: []event.Shard{{Node: n, LayerStart: 0, LayerEnd: 5, HoldsEmbedding: true, HoldsHead: true}}}
}

// wholes places k instances of model on n, with ids prefix-0, prefix-1, ...
func wholes(k int, prefix string, model ids.ModelID, n ids.NodeID) []event.Event {
	var out []event.Event
	for i := range k {
		out = append(out, whole(ids.InstanceID(fmt.Sprintf("%s-%d", prefix, i)), model, n))
	}
	return out
}

func failed(evs []event.Event) []event.Event {
	var out []event.Event
	for _, ev := range evs {
		out = append(out, ev, event.InstanceFailed{Instance: ev.(event.InstanceCreated).Instance, Category: event.FailureOutOfMemory, Detail: "test"})
	}
	return out
}

func cpuNode(id ids.NodeID, total, free int64, maxInstances int) placement.Node {
	return placement.Node{ID: string(id), TotalBytes: total, AvailableBytes: free, Backends: []string{"native-cpu"}, MaxInstances: maxInstances}
}

// decide's placement counts what the State already places: limits per node
// and per model, and memory committed but not yet seen by telemetry.
func TestDecidePlaceCountsTheState(t *testing.T) {
	tests := []struct {
		name        string
		placed      []event.Event
		nodes       []placement.Node
		maxPerModel int
		model       ids.ModelID
		wantStatus  int // 0: placed
		check       func(t *testing.T, err error)
	}{
		{
			name:   "failed_instances_hold_no_runners",
			placed: failed(wholes(16, "f", catalog.BuiltinID, node)),
			nodes:  []placement.Node{cpuNode(node, 16<<30, 8<<30, 0)},
		},
		{
			name:   "the_nodes_own_limit_counts_every_model",
			placed: append(wholes(2, "a", catalog.BuiltinID, node), whole("o", other, node)),
			nodes:  []placement.Node{cpuNode(node, 16<<30, 8<<30, 3)}, model: other, wantStatus: 409,
			check: func(t *testing.T, err error) {
				var e *placement.NodeInstanceLimitError
				if !errors.As(err, &e) || e.Nodes[0] != (placement.NodeLimit{Node: string(node), Runners: 3, Limit: 3}) {
					t.Fatalf("refusal %v, want node-a at 3 of 3", err)
				}
				if !strings.Contains(err.Error(), "--max-instances") {
					t.Errorf("message %q does not name the setting", err)
				}
			},
		},
		{
			name:   "a_full_node_leaves_the_other",
			placed: wholes(3, "a", catalog.BuiltinID, node),
			nodes:  []placement.Node{cpuNode(node, 64<<30, 64<<30, 3), cpuNode(nodeB, 16<<30, 8<<30, 0)},
		},
		{
			name:   "the_masters_per_model_limit_spans_nodes",
			placed: append(wholes(1, "a", catalog.BuiltinID, node), wholes(1, "b", catalog.BuiltinID, nodeB)...),
			nodes:  []placement.Node{cpuNode(node, 16<<30, 8<<30, 0), cpuNode(nodeB, 16<<30, 8<<30, 0)}, maxPerModel: 2, wantStatus: 409,
			check: func(t *testing.T, err error) {
				var e *placement.ModelInstanceLimitError
				if !errors.As(err, &e) || e.Instances != 2 || e.Limit != 2 || !strings.Contains(err.Error(), "--max-instances-per-model") {
					t.Fatalf("refusal %v, want the model at 2 of 2 naming the setting", err)
				}
			},
		},
		{
			name:   "the_per_model_limit_is_per_model",
			placed: wholes(2, "a", catalog.BuiltinID, node),
			nodes:  []placement.Node{cpuNode(node, 16<<30, 8<<30, 0)}, maxPerModel: 2, model: other,
		},
		{
			// Telemetry still says 256 MiB free; the State says 7 runners of
			// about 34.5 MiB each are placed there.
			name:   "committed_memory_is_a_shortfall_with_the_arithmetic",
			placed: wholes(7, "a", catalog.BuiltinID, node),
			nodes:  []placement.Node{cpuNode(node, 256<<20, 256<<20, 0)}, wantStatus: 503,
			check: func(t *testing.T, err error) {
				var e *placement.MemoryShortfallError
				if !errors.As(err, &e) {
					t.Fatalf("refusal %v, want a memory shortfall", err)
				}
				n := e.Nodes[0]
				if n.Runners != 7 || n.Committed != 7*runnerCharge(t, []int{0, 1, 2, 3, 4}, true, true, 2048) || n.Available != n.Memory-n.Committed {
					t.Errorf("estimate %+v, want 7 runners committed against the total", n)
				}
				if !strings.Contains(err.Error(), "committed by 7 placed runners") {
					t.Errorf("message %q lacks the committed term", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := replay(t, cluster(t), tt.placed...)
			model := tt.model
			if model == "" {
				model = catalog.BuiltinID
			}
			in := inputs{master: node, card: cards(t), nodes: tt.nodes, maxPerModel: tt.maxPerModel}
			evs, err := decide(s, event.PlaceInstance{ID: "next", Model: model}, in)
			if tt.wantStatus == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				replay(t, s, evs...) // the placement applies
				return
			}
			if err == nil {
				t.Fatalf("placed %+v, want a refusal", evs)
			}
			if got := placement.Status(err); got != tt.wantStatus {
				t.Errorf("status %d, want %d: %v", got, tt.wantStatus, err)
			}
			tt.check(t, err)
		})
	}
}

// Sixty placements in a row, as the security review made: whatever the
// telemetry says, they stop at the limits or at memory, through the master
// that serves POST /place_instance.
func TestRepeatedPlacementsStop(t *testing.T) {
	roomy := cpuNode(node, 64<<30, 64<<30, 0)
	tests := []struct {
		name        string
		nodes       []placement.Node
		maxPerModel int
		wantPlaced  map[ids.NodeID]int
		wantRefusal error
	}{
		{"default_per_model_limit", []placement.Node{roomy}, 0, map[ids.NodeID]int{node: 16}, &placement.ModelInstanceLimitError{}},
		{"default_per_node_limit", []placement.Node{roomy}, 1000, map[ids.NodeID]int{node: 16}, &placement.NodeInstanceLimitError{}},
		{"per_node_on_each_node", []placement.Node{roomy, cpuNode(nodeB, 64<<30, 64<<30, 0)}, 1000, map[ids.NodeID]int{node: 16, nodeB: 16}, &placement.NodeInstanceLimitError{}},
		{"the_nodes_own_limit", []placement.Node{cpuNode(node, 64<<30, 64<<30, 3)}, 1000, map[ids.NodeID]int{node: 3}, &placement.NodeInstanceLimitError{}},
		// 7 runners commit about 241 MiB of 256; telemetry never changes.
		{"memory_before_the_limits", []placement.Node{cpuNode(node, 256<<20, 256<<20, 0)}, 0, map[ids.NodeID]int{node: 7}, &placement.MemoryShortfallError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testkit.NoLeaks(t)
			ctx := context.Background()
			h := start(t, t.TempDir(), func(c *Config) {
				c.Nodes = func() []placement.Node { return tt.nodes }
				c.MaxInstancesPerModel = tt.maxPerModel
			})
			if len(tt.nodes) > 1 {
				if err := h.m.Report(ctx, event.Source{Role: event.RoleMaster, Node: node}, event.NodeJoined{Node: nodeB, AtUnixMs: 1}); err != nil {
					t.Fatal(err)
				}
			}
			accepted := 0
			for i := range 60 {
				_, err := h.m.Execute(ctx, event.PlaceInstance{ID: ids.CommandID(fmt.Sprintf("p-%02d", i)), Model: catalog.BuiltinID})
				if err == nil {
					accepted++
					continue
				}
				if fmt.Sprintf("%T", err) != fmt.Sprintf("%T", tt.wantRefusal) {
					t.Fatalf("placement %d refused with %T %v, want %T", i, err, err, tt.wantRefusal)
				}
			}
			placed := map[ids.NodeID]int{}
			for _, inst := range mustState(t, h.m).Instances {
				for _, sh := range inst.Placement {
					placed[sh.Node]++
				}
			}
			total := 0
			for n, want := range tt.wantPlaced {
				total += want
				if placed[n] != want {
					t.Errorf("%s holds %d runners, want %d", n, placed[n], want)
				}
			}
			if accepted != total {
				t.Errorf("%d of 60 placements accepted, want %d", accepted, total)
			}
		})
	}
}
