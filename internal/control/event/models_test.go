package event

import (
	"errors"
	"strings"
	"testing"
)

// TestValidateModelCard: a replicated card is bounded so that a hostile
// command cannot grow the State, and every card that validates decodes.
func TestValidateModelCard(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *ModelCard)
		want   string // a part of the error; "" means valid
	}{
		{"sample", func(c *ModelCard) {}, ""},
		{"nil_lists", func(c *ModelCard) {
			c.Files, c.Capabilities, c.CompatibleBackends, c.BackendPreference = nil, nil, nil, nil
		}, ""},
		{"bad_id", func(c *ModelCard) { c.ID = "a b" }, "id"},
		{"no_layers", func(c *ModelCard) { c.Layers, c.LayerBytes = 0, nil }, "layers"},
		{"too_many_layers", func(c *ModelCard) { c.Layers = MaxCardLayers + 1; c.LayerBytes = make([]int64, MaxCardLayers+1) }, "layers"},
		{"most_layers", func(c *ModelCard) { c.Layers = MaxCardLayers; c.LayerBytes = make([]int64, MaxCardLayers) }, ""},
		{"layer_sizes_short", func(c *ModelCard) { c.LayerBytes = c.LayerBytes[:1] }, "layer_bytes"},
		{"negative_layer", func(c *ModelCard) { c.LayerBytes[1] = -1 }, "layer_bytes[1]"},
		{"negative_storage", func(c *ModelCard) { c.StorageBytes = -1 }, "storage_bytes"},
		{"negative_draft_max", func(c *ModelCard) { c.Runtime.DraftMax = -1 }, "runtime.draft_max"},
		{"long_name", func(c *ModelCard) { c.Name = strings.Repeat("n", MaxCardStringBytes+1) }, "name"},
		{"bad_utf8_arch", func(c *ModelCard) { c.Arch = "\xff" }, "arch"},
		{"too_many_files", func(c *ModelCard) { c.Files = make([]string, MaxCardListEntries+1) }, "files"},
		{"long_task", func(c *ModelCard) { c.Tasks = []string{strings.Repeat("t", MaxCardStringBytes+1)} }, "tasks[0]"},
		{"long_template", func(c *ModelCard) { c.ChatTemplate = strings.Repeat("x", MaxChatTemplateBytes+1) }, "chat_template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sampleCard()
			tt.change(&c)
			for _, v := range []interface{ Validate() error }{AddModel{ID: "c", Card: c}, ModelAdded{Card: c}} {
				err := v.Validate()
				if tt.want == "" {
					if err != nil {
						t.Fatalf("%T: got %v, want valid", v, err)
					}
					b, err := EncodeEvent(ModelAdded{Card: c})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := DecodeEvent(b); err != nil {
						t.Fatalf("a valid card does not decode: %v", err)
					}
					continue
				}
				var ie *InvalidError
				if !errors.As(err, &ie) || ie.Field != "card" || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("%T: got %v, want an *InvalidError on the card naming %q", v, err, tt.want)
				}
			}
		})
	}
}

func TestSameCard(t *testing.T) {
	a := sampleCard()
	b := sampleCard()
	b.Files = []string{"my-model-q8_0.gguf"}
	if !SameCard(a, b) {
		t.Fatal("equal cards differ")
	}
	empty, none := sampleCard(), sampleCard()
	empty.Capabilities, none.Capabilities = []string{}, nil
	if !SameCard(empty, none) {
		t.Fatal("a nil and an empty list differ")
	}
	b.StorageBytes++
	if SameCard(a, b) {
		t.Fatal("cards of different sizes are the same")
	}
}
