// Package admin is the vocabulary of a node's administrative requests, as
// the HTTP API hands them to the services that carry them out: placing a
// model (package gateway) and managing the model catalog (package
// modeladmin). The request types are also the JSON bodies of their routes.
//
// Defining them here, not in the API, lets those services implement the
// API's interfaces without importing it; the node wires the two together.
// The package holds no state and imports only ids; anyone may import it.
package admin

import (
	"github.com/skulk/skulk/internal/ids"
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

// AddModelRequest is the body of POST /models/add.
type AddModelRequest struct {
	Ref string `json:"ref"`          // hf:OWNER/REPO[/FILE.gguf][@REVISION]
	ID  string `json:"id,omitempty"` // the model id; "" derives one from the file name
}

// ImportModelRequest is the body of POST /models/import.
type ImportModelRequest struct {
	Path string `json:"path"`         // an absolute path on the node's machine
	ID   string `json:"id,omitempty"` // the model id; "" derives one from the file name
	// FromLoopback says the request came from a loopback address (a client
	// on the node's machine), which may read under more directories. The
	// handler sets it from the connection; no body can.
	FromLoopback bool `json:"-"`
}
