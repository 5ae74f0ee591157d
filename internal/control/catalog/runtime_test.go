package catalog

import (
	"strings"
	"testing"
)

// TestRuntimeKVAndSpeculative: the KV cache types and speculative decoding
// settings a card's runtime table may hold, and the message for each it may
// not.
func TestRuntimeKVAndSpeculative(t *testing.T) {
	base, err := BuiltinCard() // stories260K: head_dim 8
	if err != nil {
		t.Fatal(err)
	}
	wide := base
	wide.HeadDim = 64
	latent, latent48 := wide, wide // latent attention: values narrower than keys
	latent.HeadDim, latent.ValueDim = 320, 256
	latent48.ValueDim = 48
	tests := []struct {
		name    string
		card    Card
		runtime Runtime
		wantErr string // "" = valid
	}{
		{"q8_0", wide, Runtime{KVCacheType: "q8_0"}, ""},
		{"q4_0", wide, Runtime{KVCacheType: "q4_0"}, ""},
		{"q8_0_head_dim_8", base, Runtime{KVCacheType: "q8_0"}, "head_dim"},
		{"q4_0_latent", latent, Runtime{KVCacheType: "q4_0"}, ""},
		{"q8_0_value_dim_48", latent48, Runtime{KVCacheType: "q8_0"}, "value_dim"},
		{"unknown_type", wide, Runtime{KVCacheType: "q5_1"}, "use f16, f32, q8_0 or q4_0"},
		{"lookup", base, Runtime{Speculative: "lookup", DraftMax: 16}, ""},
		{"draft_model", base, Runtime{DraftModel: "tiny-draft"}, ""},
		{"unknown_mode", base, Runtime{Speculative: "medusa"}, "runtime.speculative"},
		{"bad_draft_id", base, Runtime{DraftModel: "Not An Id"}, "runtime.draft_model"},
		{"self_draft", base, Runtime{DraftModel: base.ID}, "itself"},
		{"draft_max", base, Runtime{Speculative: "lookup", DraftMax: 65}, "draft_max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.card
			c.Runtime = tt.runtime
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}
