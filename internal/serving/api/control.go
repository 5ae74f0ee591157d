package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/observe/trace"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/api/openai"
	"github.com/skulk/skulk/internal/serving/request"
)

// MaxExcludedNodes bounds excluded_nodes in a placement request.
const MaxExcludedNodes = 1024

// MaxContextTokens bounds context_tokens in a placement request; the planner
// refuses anything above a model's own ceiling.
const MaxContextTokens = 1 << 24

// GET /v1/models: the models that can serve requests now.
func (s *server) listModels(w http.ResponseWriter, r *http.Request) {
	models, err := s.inference.Models(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]openai.Model, 0, len(models))
	for _, m := range models {
		owner := m.OwnedBy
		if owner == "" {
			owner = "skulk"
		}
		var created int64
		if !m.Created.IsZero() {
			created = m.Created.Unix()
		}
		out = append(out, openai.Model{ID: m.ID, Created: created, OwnedBy: owner})
	}
	s.writeJSON(w, http.StatusOK, openai.NewModelList(out))
}

// Cluster is what the routes that read the cluster need.
type Cluster interface {
	// State returns the GET /state document (JSON-marshalable).
	State(ctx context.Context) (any, error)
	// Catalog returns the model catalog with each model's placement state
	// (JSON-marshalable).
	Catalog(ctx context.Context) (any, error)
}

// Placement is what the routes that place and delete instances need.
type Placement interface {
	// Place dry-runs and then submits a placement.
	Place(ctx context.Context, req request.PlaceRequest) (request.PlaceResult, error)
	// Previews returns the placement previews of a model
	// (JSON-marshalable).
	Previews(ctx context.Context, model ids.ModelID) (any, error)
	// DeleteInstances tears down what ref names (an instance's id, a
	// unique prefix of it, or a model: each of its instances) and returns
	// the instances it tore down; an ambiguous prefix is refused naming the
	// candidates.
	DeleteInstances(ctx context.Context, ref string) ([]ids.InstanceID, error)
}

// Tracing is what POST /tracing needs.
type Tracing interface {
	// SetTracing turns the cluster-wide tracing flag on or off.
	SetTracing(ctx context.Context, enabled bool) error
}

// Diagnostics is what GET /v1/diagnostics/cluster needs; the timeline,
// node diagnostics and cluster recovery are optional capabilities of the
// same backend (timelineSource, nodeDiagnoser, clusterRecoverer).
type Diagnostics interface {
	// Diagnostics returns the GET /v1/diagnostics/cluster document:
	// master, term, and each node's role, log position and state hash.
	Diagnostics(ctx context.Context) (any, error)
}

// GET /state
func (s *server) state(w http.ResponseWriter, r *http.Request) {
	s.serveDocument(w, r, s.cluster.State)
}

// GET /v1/diagnostics/cluster: who is master and how each node stands.
func (s *server) diagnostics(w http.ResponseWriter, r *http.Request) {
	s.serveDocument(w, r, s.diag.Diagnostics)
}

// clusterRecoverer is the optional Diagnostics capability behind POST
// /v1/cluster/recover.
type clusterRecoverer interface {
	RecoverCluster(ctx context.Context) error
}

// POST /v1/cluster/recover: this node becomes the control plane's only
// voter, when the other voters are gone for good (refused with 409 while
// a majority is reachable).
func (s *server) recoverCluster(w http.ResponseWriter, r *http.Request) {
	rc, ok := s.diag.(clusterRecoverer)
	if !ok {
		s.writeError(w, r, fault.Errorf(fault.ClassNotFound, "this node cannot recover a cluster"))
		return
	}
	if err := rc.RecoverCluster(r.Context()); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"recovered": true})
}

// timelineSource is the optional Diagnostics capability behind GET
// /v1/diagnostics/cluster/timeline: what happened in the cluster in the
// last minutes (0: the default window), oldest first.
type timelineSource interface {
	Timeline(ctx context.Context, minutes int) (any, error)
}

// GET /v1/diagnostics/cluster/timeline?minutes=N
func (s *server) timeline(w http.ResponseWriter, r *http.Request) {
	src, ok := s.diag.(timelineSource)
	if !ok {
		s.writeError(w, r, fault.Errorf(fault.ClassNotFound, "this node keeps no cluster timeline"))
		return
	}
	minutes := 0
	if v := r.URL.Query().Get("minutes"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.writeError(w, r, fault.ParamErrorf("minutes", "minutes must be a whole number of minutes, got %s", fault.Quote(v)))
			return
		}
		minutes = n
		if minutes <= 0 {
			s.writeError(w, r, fault.ParamErrorf("minutes", "minutes must be at least 1, got %d", n))
			return
		}
	}
	s.serveDocument(w, r, func(ctx context.Context) (any, error) { return src.Timeline(ctx, minutes) })
}

// nodeDiagnoser is the optional Diagnostics capability behind GET
// /v1/diagnostics/node: this node's facts and its runners' flight
// recorders.
type nodeDiagnoser interface {
	NodeDiagnostics(ctx context.Context) (any, error)
}

// GET /v1/diagnostics/node
func (s *server) nodeDiagnostics(w http.ResponseWriter, r *http.Request) {
	d, ok := s.diag.(nodeDiagnoser)
	if !ok {
		s.writeError(w, r, fault.Errorf(fault.ClassNotFound, "this node offers no diagnostics of its own"))
		return
	}
	s.serveDocument(w, r, d.NodeDiagnostics)
}

// GET /v1/traces/{id}[?format=otlp]: a request this node answered, as the
// spans its nodes recorded while the cluster's tracing was on; id may be
// the unique start of one.
func (s *server) getTrace(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "otlp" {
		s.writeError(w, r, fault.ParamErrorf("format", "format must be json or otlp, got %s", fault.Quote(format)))
		return
	}
	if !trace.ValidID(id) && id != "" {
		// The start of an id, as a trace is named in every command.
		switch m := s.cfg.Traces.Matching(id, 8); len(m) {
		case 0:
		case 1:
			id = m[0]
		default:
			s.writeError(w, r, fault.Errorf(fault.ClassConflict, "%s is the start of several traces' ids: %s; give more of the id", fault.Quote(id), strings.Join(m, ", ")))
			return
		}
	}
	t, ok := s.cfg.Traces.Get(id)
	if !trace.ValidID(id) || !ok {
		s.writeError(w, r, fault.Errorf(fault.ClassNotFound, "this node holds no trace %s: a trace is kept by the node that answered the request, "+
			"for the latest 1,000 requests of the last hour, and only for requests made while tracing was on (POST /tracing {\"enabled\": true})", fault.Quote(id)))
		return
	}
	if format == "otlp" {
		s.writeJSON(w, http.StatusOK, t.OTLP())
		return
	}
	s.writeJSON(w, http.StatusOK, t.Document())
}

// POST /tracing {"enabled": bool}: the cluster-wide tracing flag.
func (s *server) setTracing(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req struct {
		Enabled *bool `json:"enabled"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Enabled == nil {
		s.writeError(w, r, fault.ParamErrorf("enabled", "the body must be {\"enabled\": true|false}"))
		return
	}
	if err := s.tracing.SetTracing(r.Context(), *req.Enabled); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]bool{"enabled": *req.Enabled})
}

// GET /models: the catalog with each model's placement state.
func (s *server) catalog(w http.ResponseWriter, r *http.Request) {
	s.serveDocument(w, r, s.cluster.Catalog)
}

// GET /instance/previews?model_id=
func (s *server) previews(w http.ResponseWriter, r *http.Request) {
	model := ids.ModelID(r.URL.Query().Get("model_id"))
	if model == "" {
		s.writeError(w, r, fault.ParamErrorf("model_id", "the query parameter model_id is required"))
		return
	}
	if err := model.Validate(); err != nil {
		s.writeError(w, r, fault.ParamErrorf("model_id", "model_id: %v", err))
		return
	}
	doc, err := s.placement.Previews(r.Context(), model)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, doc)
}

// POST /place_instance
func (s *server) placeInstance(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeBody(s, w, r, DecodePlaceRequest)
	if !ok {
		return
	}
	res, err := s.placement.Place(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, placeResponse{InstanceID: res.InstanceID, CommandID: ids.CommandID(res.InstanceID)})
}

// placeResponse names the one id both ways (an instance's id is the id of
// the command that placed it).
type placeResponse struct {
	InstanceID ids.InstanceID `json:"instance_id"`
	CommandID  ids.CommandID  `json:"command_id"`
}

// DELETE /instance/{id...}: id is an instance's id, a unique prefix of
// it, or a model, whose every instance is torn down.
func (s *server) deleteInstance(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("id")
	if err := ids.ModelID(ref).Validate(); err != nil { // an instance id, or a prefix of one, is a valid model id too
		s.writeError(w, r, fault.ParamErrorf("id", "instance id or model: %v", err))
		return
	}
	stopped, err := s.placement.DeleteInstances(r.Context(), ref)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, deleteResponse{InstanceID: stopped[0], InstanceIDs: stopped})
}

// deleteResponse names the instances a DELETE /instance/… tore down:
// instance_id the first (the one, for an id or a prefix), instance_ids all.
type deleteResponse struct {
	InstanceID  ids.InstanceID   `json:"instance_id"`
	InstanceIDs []ids.InstanceID `json:"instance_ids"`
}

// serveDocument answers with the JSON document get returns.
func (s *server) serveDocument(w http.ResponseWriter, r *http.Request, get func(context.Context) (any, error)) {
	doc, err := get(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, doc)
}

// DecodePlaceRequest decodes and checks a POST /place_instance body. Unlike
// the OpenAI bodies it is strict: an unknown field is refused, because a
// misspelt placement option silently ignored would place the wrong thing.
func DecodePlaceRequest(body []byte) (request.PlaceRequest, error) {
	var req request.PlaceRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return req, fault.Errorf(fault.ClassInvalid, "the request body is empty; send a JSON object with model_id")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return request.PlaceRequest{}, placeDecodeError(err)
	}
	if dec.More() {
		return request.PlaceRequest{}, fault.Errorf(fault.ClassInvalid, "the request body holds more than one JSON value")
	}
	switch {
	case req.ModelID == "":
		return req, fault.ParamErrorf("model_id", "model_id is required")
	case req.MinNodes < 0:
		return req, fault.ParamErrorf("min_nodes", "min_nodes must not be negative, got %d", req.MinNodes)
	case req.ContextTokens < 0 || req.ContextTokens > MaxContextTokens:
		return req, fault.ParamErrorf("context_tokens", "context_tokens must be between 0 and %d, got %d", MaxContextTokens, req.ContextTokens)
	case len(req.ExcludedNodes) > MaxExcludedNodes:
		return req, fault.ParamErrorf("excluded_nodes", "at most %d excluded nodes are allowed", MaxExcludedNodes)
	case !placement.KnownKVCacheType(req.CacheType):
		return req, fault.ParamErrorf("cache_type", "cache_type %s is not a KV cache type; use f16, f32, q8_0 or q4_0", fault.Quote(fault.Clip(req.CacheType)))
	case req.Speculative != "" && req.Speculative != catalog.SpeculativeLookup:
		return req, fault.ParamErrorf("speculative", "speculative %s is not a mode; use %q (or name a draft_model)", fault.Quote(fault.Clip(req.Speculative)), catalog.SpeculativeLookup)
	}
	if req.DraftModel != "" {
		if err := ids.ModelID(req.DraftModel).Validate(); err != nil {
			return req, fault.ParamErrorf("draft_model", "draft_model: %v", err)
		}
	}
	if err := req.ModelID.Validate(); err != nil {
		return req, fault.ParamErrorf("model_id", "model_id: %v", err)
	}
	for i, n := range req.ExcludedNodes {
		if err := n.Validate(); err != nil {
			return req, fault.ParamErrorf("excluded_nodes", "excluded_nodes[%d]: %v", i, err)
		}
	}
	return req, nil
}

func placeDecodeError(err error) error {
	if syn, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fault.Errorf(fault.ClassInvalid, "the request body is not valid JSON: %s (at byte %d)", syn.Error(), syn.Offset)
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return fault.Errorf(fault.ClassInvalid, "the request body must be a JSON object, not a JSON %s", fault.Clip(te.Value))
		}
		field := fault.Clip(te.Field)
		return fault.ParamErrorf(field, "field %s has the wrong type: a JSON %s", field, fault.Clip(te.Value))
	}
	// encoding/json reports unknown fields only as text.
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field = fault.Clip(strings.Trim(field, `"`))
		return fault.ParamErrorf(field, "unknown field %s; known fields are model_id, min_nodes, context_tokens, excluded_nodes, cache_type, speculative, draft_model", fault.Quote(field))
	}
	return fault.Errorf(fault.ClassInvalid, "the request body cannot be decoded: %v", err)
}
