package request

// A placement is an administrative request the gateway carries out
// (package modeladmin holds the catalog's). The types are the JSON bodies
// of their routes; defining them here, not in the API, lets the gateway
// implement the API's interfaces without importing it.

import (
	"github.com/skulk/skulk/internal/platform/ids"
)

// PlaceRequest is the body of POST /place_instance.
type PlaceRequest struct {
	ModelID       ids.ModelID  `json:"model_id"`
	MinNodes      int          `json:"min_nodes,omitempty"`      // 0: the planner's choice
	ContextTokens int          `json:"context_tokens,omitempty"` // 0: the served default
	ExcludedNodes []ids.NodeID `json:"excluded_nodes,omitempty"`
	// CacheType is the KV cache element type: f16, f32, q8_0 or q4_0 ("":
	// the card's runtime.kv_cache_type, else f16).
	CacheType string `json:"cache_type,omitempty"`
	// Speculative ("lookup") and DraftModel (a catalog model id of the same
	// vocabulary) turn on speculative decoding for this placement,
	// overriding the card's runtime settings.
	Speculative string `json:"speculative,omitempty"`
	DraftModel  string `json:"draft_model,omitempty"`
}

// PlaceResult is an accepted placement. The instance id is the id of the
// command that creates it; the response names it both ways.
type PlaceResult struct {
	InstanceID ids.InstanceID
}
