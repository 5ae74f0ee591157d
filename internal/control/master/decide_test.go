package master

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/testkit"
)

const decideNowMs = 1_700_000_123_456

// decideFixture is a cluster of node and node-b with, all on node:
// "ready-1" and "ready-2" (ready) and "loading" (a pending instance of
// other).
func decideFixture(t *testing.T) state.State {
	t.Helper()
	ready := func(inst ids.InstanceID, runner ids.RunnerID) event.Event {
		return event.RunnerStatusUpdated{Runner: runner, Instance: inst, Rank: 0, Node: node, Status: event.RunnerReady}
	}
	return replay(t, cluster(t),
		whole("ready-1", catalog.BuiltinID, node), ready("ready-1", "r-1"),
		whole("ready-2", catalog.BuiltinID, node), ready("ready-2", "r-2"),
		whole("loading", other, node),
	)
}

// unhandled is a command kind the master does not decide (the set is
// closed; the embedded nil interface is never called).
type unhandled struct{ event.Command }

func (unhandled) Kind() event.Kind { return event.KindTracingSet }

// TestDecide: each command kind turns into the events it decides, or into
// the typed refusal, against one State; decided events apply to it.
func TestDecide(t *testing.T) {
	shard := []event.Shard{{Node: nodeB, LayerStart: 0, LayerEnd: 5, HoldsEmbedding: true, HoldsHead: true}}
	roomy := []placement.Node{cpuNode(node, 16<<30, 8<<30, 0), cpuNode(nodeB, 16<<30, 8<<30, 0)}

	tests := []struct {
		name  string
		cmd   event.Command
		nodes []placement.Node // default: roomy
		want  []event.Event    // exact, unless check is set
		check func(t *testing.T, evs []event.Event)
		// A refusal: its class, or (wantAs) its type.
		wantClass fault.Class
		wantAs    any
	}{
		{name: "place", cmd: event.PlaceInstance{ID: "place-1", Model: catalog.BuiltinID},
			check: func(t *testing.T, evs []event.Event) {
				ic, ok := evs[0].(event.InstanceCreated)
				if len(evs) != 1 || !ok || ic.Instance != "place-1" || ic.Model != catalog.BuiltinID || len(ic.Placement) == 0 || ic.CreatedAtUnixMs != decideNowMs {
					t.Fatalf("decided %+v, want one InstanceCreated of place-1 stamped %d", evs, decideNowMs)
				}
			}},
		{name: "place_unknown_model", cmd: event.PlaceInstance{ID: "place-1", Model: "nope"}, wantClass: fault.ClassNotFound},
		{name: "place_without_room", cmd: event.PlaceInstance{ID: "place-1", Model: catalog.BuiltinID},
			nodes: []placement.Node{cpuNode(node, 32<<20, 32<<20, 0)}, wantAs: new(*placement.MemoryShortfallError)},
		{name: "create", cmd: event.CreateInstance{ID: "create-1", Model: catalog.BuiltinID, Backend: "native-cpu", Placement: shard, Layers: 5, ContextTokens: 512},
			want: []event.Event{event.InstanceCreated{Instance: "create-1", Model: catalog.BuiltinID, Backend: "native-cpu", Placement: shard,
				Layers: 5, ContextTokens: 512, CreatedAtUnixMs: decideNowMs}}},
		{name: "create_unknown_model", cmd: event.CreateInstance{ID: "create-1", Model: "nope", Backend: "native-cpu", Placement: shard, Layers: 5, ContextTokens: 512},
			wantClass: fault.ClassNotFound},
		{name: "delete", cmd: event.DeleteInstance{ID: "del", Instance: "ready-1"},
			want: []event.Event{event.InstanceDeleted{Instance: "ready-1", Reason: event.DeleteOperator}}},
		{name: "delete_unknown", cmd: event.DeleteInstance{ID: "del", Instance: "nope"}, wantClass: fault.ClassNotFound},
		{name: "tracing", cmd: event.SetTracingEnabled{ID: "trace", Enabled: true}, want: []event.Event{event.TracingSet{Enabled: true}}},
		{name: "fail", cmd: event.FailInstance{ID: "fail", Instance: "ready-1", Node: node, Category: event.FailureCrashLoop, Detail: "3 crashes"},
			want: []event.Event{event.InstanceFailed{Instance: "ready-1", Category: event.FailureCrashLoop, Detail: "3 crashes", AtUnixMs: decideNowMs}}},
		{name: "fail_unknown_is_a_no_op", cmd: event.FailInstance{ID: "fail", Instance: "nope", Node: node, Category: event.FailureCrashLoop, Detail: "x"}},
		{name: "refusal_re_places_without_the_node", cmd: event.RefuseInstancePlacement{ID: "refuse", Instance: "ready-2", Node: node, Reason: "memory"},
			want: []event.Event{event.InstanceDeleted{Instance: "ready-2", Reason: event.DeleteRefused},
				event.InstanceCreated{Instance: "ready-2", Model: catalog.BuiltinID, Backend: "native-cpu", Placement: shard, Layers: 5,
					ContextTokens: 2048, ExcludedNodes: []ids.NodeID{node}, RefusalHops: 1, CreatedAtUnixMs: decideNowMs}}},
		{name: "refusal_with_nowhere_else_fails_the_instance", cmd: event.RefuseInstancePlacement{ID: "refuse", Instance: "ready-1", Node: node, Reason: "memory"},
			nodes: []placement.Node{cpuNode(node, 16<<30, 8<<30, 0)},
			check: func(t *testing.T, evs []event.Event) {
				if f, ok := evs[0].(event.InstanceFailed); len(evs) != 1 || !ok || f.Instance != "ready-1" || f.Category != event.FailureOutOfMemory || f.AtUnixMs != decideNowMs {
					t.Fatalf("decided %+v, want ready-1 failed out of memory", evs)
				}
			}},
		{name: "refusal_of_an_unknown_instance_is_a_no_op", cmd: event.RefuseInstancePlacement{ID: "refuse", Instance: "nope", Node: node, Reason: "memory"}},
		{name: "unhandled_command", cmd: unhandled{}, wantClass: fault.ClassInvalid},
	}
	s := decideFixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := tt.nodes
			if nodes == nil {
				nodes = roomy
			}
			in := inputs{master: node, nowMs: decideNowMs, card: cards(t), nodes: nodes}
			evs, err := decide(s, tt.cmd, in)
			switch {
			case tt.wantClass != "" || tt.wantAs != nil:
				if err == nil {
					t.Fatalf("decided %+v, want a refusal", evs)
				}
				if tt.wantClass != "" && fault.ClassOf(err) != tt.wantClass {
					t.Fatalf("refused with %v (class %s), want class %s", err, fault.ClassOf(err), tt.wantClass)
				}
				if tt.wantAs != nil && !errors.As(err, tt.wantAs) {
					t.Fatalf("refused with %T %v, want %T", err, err, tt.wantAs)
				}
				return
			case err != nil:
				t.Fatalf("refused: %v", err)
			case tt.check != nil:
				tt.check(t, evs)
			case !reflect.DeepEqual(evs, tt.want):
				t.Fatalf("decided\n%+v\nwant\n%+v", evs, tt.want)
			}
			replay(t, s, evs...) // what decide says applies, in order
		})
	}
}

// TestMasterStampsItsClock: the master reads time only from Config.Now, at
// the moment it decides.
func TestMasterStampsItsClock(t *testing.T) {
	testkit.NoLeaks(t)
	clk := testkit.NewClock(time.UnixMilli(1_700_000_000_000))
	h := start(t, t.TempDir(), func(c *Config) { c.Now = clk.Now })
	ctx := context.Background()
	for i, id := range []ids.CommandID{"p-1", "p-2"} {
		if i > 0 {
			clk.Advance(90 * time.Second)
		}
		evs, err := h.m.Execute(ctx, event.PlaceInstance{ID: id, Model: catalog.BuiltinID})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := evs[0].Event.(event.InstanceCreated).CreatedAtUnixMs, clk.Now().UnixMilli(); got != want {
			t.Fatalf("%s stamped %d, want the clock's %d", id, got, want)
		}
	}
	if got := mustState(t, h.m).Nodes[node].JoinedAtUnixMs; got != 1_700_000_000_000 {
		t.Fatalf("the master's own node joined at %d, want the clock's start", got)
	}
}
