package catalog

import (
	"reflect"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/control/event"
)

// fullCard sets every field a replicated card carries.
func fullCard() Card {
	return Card{
		ID: "org/full", Name: "Full", Repo: "org/full-gguf", Files: []string{"full-q8_0.gguf"},
		Revision: strings.Repeat("ab", 20), Arch: "llama", Layers: 2, HiddenSize: 256, Heads: 4, KVHeads: 2,
		HeadDim: 64, ValueDim: 64, VocabSize: 1024, ContextLength: 4096, StorageBytes: 3 << 20,
		LayerBytes: []int64{1 << 20, 1 << 20}, EmbeddingBytes: 1 << 19, HeadBytes: 1 << 19, TiedEmbeddings: true,
		Tasks: []string{"text-generation"}, Capabilities: []Capability{CapTools}, CompatibleBackends: []string{"native-cpu"},
		BackendPreference: []string{"native-cpu"},
		Runtime: Runtime{MaxPipelineSplitLayer: 1, ServedContext: 2048, KVCacheType: "q8_0", Speculative: SpeculativeLookup,
			DraftMax: 4},
		ChatTemplate: "{{ messages }}",
	}
}

// TestWireRoundTrip: a card that travels through the log (encoded and
// decoded as ModelAdded) comes back equal, with the same digest, so a
// member's copy of the bytes is checked against the same artifact.
func TestWireRoundTrip(t *testing.T) {
	minimal := fullCard()
	minimal.Name, minimal.Repo, minimal.Files, minimal.Revision = "", "", nil, ""
	minimal.Capabilities, minimal.CompatibleBackends, minimal.BackendPreference = nil, nil, nil
	minimal.Runtime, minimal.ChatTemplate = Runtime{}, ""
	for _, tc := range []struct {
		name string
		card Card
	}{{"full", fullCard()}, {"minimal", minimal}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.card.Validate(); err != nil {
				t.Fatal(err)
			}
			b, err := event.EncodeEvent(event.ModelAdded{Card: tc.card.Wire()})
			if err != nil {
				t.Fatal(err)
			}
			ev, err := event.DecodeEvent(b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := FromWire(ev.(event.ModelAdded).Card)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.card) || got.Digest() != tc.card.Digest() {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, tc.card)
			}
		})
	}
}

// TestWireRefusesInvalid: a replicated card that is no valid card (here:
// a split GGUF listed in part) is refused, not served.
func TestWireRefusesInvalid(t *testing.T) {
	w := fullCard().Wire()
	w.Files = []string{"full-00001-of-00002.gguf"}
	if _, err := FromWire(w); err == nil {
		t.Fatal("a card listing half a split GGUF converted")
	}
}

// TestBehind: a node's own card wins over a replicated one of the same id;
// replicated cards fill the ids the node lacks; invalid ones are reported.
func TestBehind(t *testing.T) {
	own := fullCard()
	own.Name = "own"
	local, _ := Build(staticSource{own})
	theirs := fullCard().Wire()
	theirs.Name = "replicated"
	other := fullCard()
	other.ID = "org/other"
	bad := fullCard().Wire()
	bad.ID, bad.Layers = "org/bad", 3
	merged, errs := local.Behind(Replicated{theirs, other.Wire(), bad})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "org/bad") {
		t.Fatalf("errors %v, want the invalid card's", errs)
	}
	if c, _ := merged.Get("org/full"); c.Name != "own" {
		t.Fatalf("the node's own card lost to the replicated one: %+v", c)
	}
	if _, ok := merged.Get("org/other"); !ok {
		t.Fatal("a replicated card is missing")
	}
	if _, ok := local.Get("org/other"); ok {
		t.Fatal("Behind changed the catalog it was called on")
	}
}

type staticSource []Card

func (s staticSource) Cards() ([]Card, error) { return s, nil }
