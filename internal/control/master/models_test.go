package master

import (
	"reflect"
	"testing"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// replicatedID is a model only the State's catalog knows: the master's own
// catalog (cards) has no card for it.
const replicatedID = ids.ModelID("org/imported")

func replicatedCard(t *testing.T, id ids.ModelID) event.ModelCard {
	t.Helper()
	c, err := catalog.BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	c.ID, c.Builtin = string(id), false
	return c.Wire()
}

// TestDecideModels: cards enter and leave the cluster's catalog through the
// master, and a card only the State holds places like a local one.
func TestDecideModels(t *testing.T) {
	known := replicatedCard(t, replicatedID)
	fresh := replicatedCard(t, "org/fresh")
	changed := known
	changed.StorageBytes++
	invalid := replicatedCard(t, "org/bad")
	invalid.Repo, invalid.Files = "org/bad-gguf", []string{"bad.gguf"} // a repository without a revision
	builtin := replicatedCard(t, catalog.BuiltinID)

	withCard := replay(t, cluster(t), event.ModelAdded{Card: known})
	inUse := replay(t, withCard, whole("imp-1", replicatedID, node))
	roomy := []placement.Node{cpuNode(node, 16<<30, 8<<30, 0), cpuNode(nodeB, 16<<30, 8<<30, 0)}
	tests := []struct {
		name      string
		s         state.State
		cmd       event.Command
		want      []event.Event
		wantClass fault.Class
		placed    bool // want one InstanceCreated of the command's id
	}{
		{name: "add", s: withCard, cmd: event.AddModel{ID: "a", Card: fresh}, want: []event.Event{event.ModelAdded{Card: fresh}}},
		{name: "add_the_same_card_again_is_a_no_op", s: withCard, cmd: event.AddModel{ID: "a", Card: known}},
		{name: "add_another_card_under_a_taken_id", s: withCard, cmd: event.AddModel{ID: "a", Card: changed}, wantClass: fault.ClassConflict},
		{name: "add_the_builtin_id", s: withCard, cmd: event.AddModel{ID: "a", Card: builtin}, wantClass: fault.ClassConflict},
		{name: "add_an_invalid_card", s: withCard, cmd: event.AddModel{ID: "a", Card: invalid}, wantClass: fault.ClassInvalid},
		{name: "remove", s: withCard, cmd: event.RemoveModel{ID: "r", Model: replicatedID}, want: []event.Event{event.ModelRemoved{Model: replicatedID}}},
		{name: "remove_unknown", s: withCard, cmd: event.RemoveModel{ID: "r", Model: "org/nope"}, wantClass: fault.ClassNotFound},
		{name: "remove_in_use", s: inUse, cmd: event.RemoveModel{ID: "r", Model: replicatedID}, wantClass: fault.ClassConflict},
		{name: "place_a_replicated_card", s: withCard, cmd: event.PlaceInstance{ID: "p", Model: replicatedID}, placed: true},
		{name: "create_a_replicated_card", s: withCard, cmd: event.CreateInstance{ID: "p", Model: replicatedID, Backend: "native-cpu",
			Placement: whole("p", replicatedID, nodeB).Placement, Layers: 5, ContextTokens: 512}, placed: true},
		{name: "place_once_removed", s: cluster(t), cmd: event.PlaceInstance{ID: "p", Model: replicatedID}, wantClass: fault.ClassNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := inputs{master: node, nowMs: decideNowMs, card: cards(t), nodes: roomy}
			evs, err := decide(tt.s, tt.cmd, in)
			switch {
			case tt.wantClass != "":
				if fault.ClassOf(err) != tt.wantClass {
					t.Fatalf("decided %+v, %v (class %s); want class %s", evs, err, fault.ClassOf(err), tt.wantClass)
				}
				return
			case err != nil:
				t.Fatalf("refused: %v", err)
			case tt.placed:
				if ic, ok := evs[0].(event.InstanceCreated); len(evs) != 1 || !ok || ic.Instance != tt.cmd.CommandID().Instance() {
					t.Fatalf("decided %+v, want one InstanceCreated", evs)
				}
			case !reflect.DeepEqual(evs, tt.want):
				t.Fatalf("decided\n%+v\nwant\n%+v", evs, tt.want)
			}
			replay(t, tt.s, evs...)
		})
	}
}

// TestCardsPrefersTheLocalCard: a node's own card of a model (its bytes)
// wins over the replicated one; the replicated one fills what it lacks.
func TestCardsPrefersTheLocalCard(t *testing.T) {
	s := replay(t, cluster(t), event.ModelAdded{Card: replicatedCard(t, other)}, event.ModelAdded{Card: replicatedCard(t, replicatedID)})
	local := cards(t)
	look := Cards(s, func(id ids.ModelID) (catalog.Card, bool) {
		c, ok := local(id)
		c.Name = "local"
		return c, ok
	})
	if c, ok := look(other); !ok || c.Name != "local" {
		t.Fatalf("other: %+v %v, want the local card", c, ok)
	}
	if c, ok := look(replicatedID); !ok || c.ID != string(replicatedID) {
		t.Fatalf("%s: %+v %v, want the replicated card", replicatedID, c, ok)
	}
	if _, ok := Cards(s, nil)("org/nope"); ok {
		t.Fatal("an unknown model has a card")
	}
}
