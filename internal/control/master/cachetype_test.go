package master

import (
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// TestPlaceCacheType: a placement's cache_type is stamped on the instance
// (for the runners and for re-placements), and the instance is charged for
// the KV of that type: q4_0 less than q8_0, q8_0 less than the fp16
// default, each exactly placement.Charge of the card in that type.
func TestPlaceCacheType(t *testing.T) {
	s := cluster(t)
	nodes := []placement.Node{cpuNode(node, 16<<30, 8<<30, 0)}
	builtin, _ := cards(t)(catalog.BuiltinID)
	// stories260K's head_dim 8 is no whole number of 32-element blocks.
	_, err := decide(s, event.PlaceInstance{ID: "place-small-head", Model: catalog.BuiltinID, CacheType: placement.KVCacheQ8_0},
		inputs{master: node, card: cards(t), nodes: nodes})
	if fault.ClassOf(err) != fault.ClassInvalid || !strings.Contains(err.Error(), "head_dim") {
		t.Fatalf("q8_0 on head_dim 8: %v, want a 400 naming head_dim", err)
	}
	// The same card with 64-wide heads.
	card := builtin
	card.Heads, card.KVHeads, card.HeadDim = 1, 1, 64
	in := inputs{master: node, card: func(ids.ModelID) (catalog.Card, bool) { return card, true }, nodes: nodes}
	var prev int64
	for i, ct := range []string{"", placement.KVCacheQ8_0, placement.KVCacheQ4_0} {
		evs, err := decide(s, event.PlaceInstance{ID: ids.CommandID("place-" + string(rune('a'+i))), Model: catalog.BuiltinID, CacheType: ct}, in)
		if err != nil {
			t.Fatalf("%q: %v", ct, err)
		}
		ic, ok := evs[0].(event.InstanceCreated)
		if !ok || ic.CacheType != ct {
			t.Fatalf("%q: placed %+v, want the cache type stamped", ct, evs[0])
		}
		placed := replay(t, s, evs...)
		inst := placed.Instances[ic.Instance]
		if inst.CacheType != ct {
			t.Fatalf("%q: the State's instance has cache type %q", ct, inst.CacheType)
		}
		sh := inst.Placement[0]
		r := placement.Rank{Start: int(sh.LayerStart), End: int(sh.LayerEnd), HoldsEmbedding: sh.HoldsEmbedding, HoldsHead: sh.HoldsHead}
		want, err := placement.Charge(card.WithCacheType(ct).PlacementModel(), r, int(inst.ContextTokens))
		if err != nil {
			t.Fatal(err)
		}
		got := placement.Charged(nodes, catalog.Running(placed, in.card, ""))[0].CommittedBytes
		if got != want {
			t.Errorf("%q: charged %d, want %d", ct, got, want)
		}
		if prev != 0 && got >= prev {
			t.Errorf("%q: charged %d, not less than the previous type's %d", ct, got, prev)
		}
		prev = got
	}
}

// TestPlaceSpeculative: a placement's speculative settings are stamped on
// the instance; a draft model outside the catalog, the model itself, or one
// of another vocabulary size is refused as an invalid request.
func TestPlaceSpeculative(t *testing.T) {
	s := cluster(t)
	nodes := []placement.Node{cpuNode(node, 16<<30, 8<<30, 0)}
	builtin, _ := cards(t)(catalog.BuiltinID)
	draft, bigger := builtin, builtin
	draft.ID, bigger.ID, bigger.VocabSize = "draft", "bigger", builtin.VocabSize+1
	byID := map[ids.ModelID]catalog.Card{catalog.BuiltinID: builtin, "draft": draft, "bigger": bigger}
	in := inputs{master: node, nodes: nodes, card: func(id ids.ModelID) (catalog.Card, bool) { c, ok := byID[id]; return c, ok }}
	evs, err := decide(s, event.PlaceInstance{ID: "spec", Model: catalog.BuiltinID, Speculative: "lookup", DraftModel: "draft"}, in)
	if err != nil {
		t.Fatal(err)
	}
	placed := replay(t, s, evs...)
	if inst := placed.Instances["spec"]; inst.Speculative != "lookup" || inst.DraftModel != "draft" {
		t.Fatalf("instance %+v, want the speculative settings stamped", inst)
	}
	for _, d := range []ids.ModelID{"absent", catalog.BuiltinID, "bigger"} {
		_, err := decide(s, event.PlaceInstance{ID: "spec-" + ids.CommandID(d), Model: catalog.BuiltinID, DraftModel: d}, in)
		if fault.ClassOf(err) != fault.ClassInvalid || !strings.Contains(err.Error(), "draft") {
			t.Errorf("draft model %s: %v, want an invalid request naming the draft", d, err)
		}
	}
}
