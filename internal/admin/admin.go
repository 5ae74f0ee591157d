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
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/skulk/skulk/internal/ids"
)

// PlaceRequest is the body of POST /place_instance.
type PlaceRequest struct {
	ModelID       ids.ModelID  `json:"model_id"`
	MinNodes      int          `json:"min_nodes,omitempty"`      // 0: the planner's choice
	ContextTokens int          `json:"context_tokens,omitempty"` // 0: the served default
	ExcludedNodes []ids.NodeID `json:"excluded_nodes,omitempty"`
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

// maxQuotedPath bounds how much of a client's path an answer repeats.
const maxQuotedPath = 200

// QuotePath quotes a client-supplied path for an error message: at most its
// first 200 bytes (cut on a character boundary), then an ellipsis and its
// length, so an answer never echoes a huge body back.
func QuotePath(p string) string {
	if len(p) <= maxQuotedPath {
		return strconv.Quote(p)
	}
	cut := maxQuotedPath
	for cut > 0 && !utf8.RuneStart(p[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(p[:cut]), len(p))
}
