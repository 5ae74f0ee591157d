package api

import (
	"context"
	"net/http"

	"github.com/skulk/skulk/internal/platform/fault"
)

// Keys is what the /v1/keys routes need: the cluster's run-time API keys
// (skulk keys). Every method returns a JSON-marshalable document; errors
// follow the Backends' conventions.
type Keys interface {
	// AddKey generates a key of scope (admin or inference) named name,
	// adds its digest to the cluster and returns the key: the only time it
	// is shown.
	AddKey(ctx context.Context, name, scope string) (any, error)
	// ListKeys lists the keys in force, run-time and configured, without
	// their secrets or digests.
	ListKeys(ctx context.Context) (any, error)
	// RemoveKey removes a run-time key; a configured one is refused.
	RemoveKey(ctx context.Context, name string) (any, error)
}

// keyRoutes registers the key management routes: all of them need the
// admin scope, listing too (a list of keys tells whom to impersonate).
func (s *server) keyRoutes() {
	if s.keys == nil {
		return
	}
	s.admin("POST /v1/keys", s.addKey)
	s.admin("GET /v1/keys", s.listKeys)
	s.admin("DELETE /v1/keys/{name}", s.removeKey)
}

// POST /v1/keys {"name": "ci", "scope": "inference"}
func (s *server) addKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name  string `json:"name"`
		Scope string `json:"scope"`
	}
	if !s.decodeStrict(w, r, &req, "name, scope") {
		return
	}
	if req.Name == "" {
		s.writeError(w, r, fault.ParamErrorf("name", "name is required, e.g. {\"name\": \"ci\", \"scope\": \"inference\"}"))
		return
	}
	if req.Scope == "" {
		req.Scope = "admin"
	}
	// The answer holds the key: no cache may keep it.
	w.Header().Set("Cache-Control", "no-store")
	s.answer(w, r, func(ctx context.Context) (any, error) { return s.keys.AddKey(ctx, req.Name, req.Scope) })
}

// GET /v1/keys
func (s *server) listKeys(w http.ResponseWriter, r *http.Request) {
	s.answer(w, r, s.keys.ListKeys)
}

// DELETE /v1/keys/{name}
func (s *server) removeKey(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	s.answer(w, r, func(ctx context.Context) (any, error) { return s.keys.RemoveKey(ctx, name) })
}
