package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/skulk/skulk/internal/models/modeladmin"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// ModelAdmin is what the /models/... routes need: the management of this
// node's model catalog (adding cards from the Hub, importing local files,
// downloading, removing, and sizing models). Without one (Backends.Models
// nil) the routes answer 404. Every method returns a JSON-marshalable
// document; errors follow the Backends' conventions (a *fault.Error class,
// or HTTPStatus()).
type ModelAdmin interface {
	// AddModel resolves a Hub reference and stores its card.
	AddModel(ctx context.Context, req modeladmin.AddModelRequest) (any, error)
	// ImportModel installs a GGUF file that is on the node's machine.
	ImportModel(ctx context.Context, req modeladmin.ImportModelRequest) (any, error)
	// PullModel starts (or joins) the download of a model's weights on this
	// node and returns at once; ShowModel reports the progress.
	PullModel(ctx context.Context, id ids.ModelID) (any, error)
	// ShowModel returns one model: its card, whether this node has its
	// weights (or why not), its download and its instances.
	ShowModel(ctx context.Context, id ids.ModelID) (any, error)
	// RemoveModel deletes a model's custom card and, with files, its
	// downloaded weights; it refuses while an instance uses the model.
	RemoveModel(ctx context.Context, id ids.ModelID, files bool) (any, error)
	// ModelRequirements sizes a model at a context window (0: its default).
	ModelRequirements(ctx context.Context, id ids.ModelID, contextTokens int) (any, error)
	// SearchModels lists GGUF repositories on the Hub.
	SearchModels(ctx context.Context, query string, limit int) (any, error)
	// Library lists the short names (qwen3:8b) an add or a pull takes, and
	// which of them the catalog holds and this node has.
	Library(ctx context.Context) (any, error)
	// UploadStatus reports how many bytes of the file with this SHA-256
	// the node holds from an upload, so a client resumes there.
	UploadStatus(ctx context.Context, digest string) (any, error)
	// UploadModel writes one range of a file from body, read as it
	// arrives, and imports the file once it is whole and verified.
	UploadModel(ctx context.Context, req modeladmin.UploadRequest, body io.Reader) (any, error)
}

// MaxSearchQuery bounds the q parameter of GET /models/search.
const MaxSearchQuery = 256

// modelRoutes registers the routes of model catalog management.
func (s *server) modelRoutes() {
	s.admin("POST /models/add", s.withModelAdmin(s.addModel))
	s.admin("POST /models/import", s.withModelAdmin(s.importModel))
	s.admin("POST /models/pull", s.withModelAdmin(s.pullModel))
	s.admin("PUT /models/upload/{sha256}", s.withModelAdmin(s.uploadModel))
	// Admin too: whether a node holds bytes of a file is the uploader's
	// business.
	s.admin("GET /models/upload/{sha256}", s.withModelAdmin(s.uploadStatus))
	s.mux.HandleFunc("GET /models/requirements", s.withModelAdmin(s.modelRequirements))
	s.mux.HandleFunc("GET /models/search", s.withModelAdmin(s.searchModels))
	s.mux.HandleFunc("GET /models/library", s.withModelAdmin(s.modelLibrary))
	// Model ids may contain "/", so the id is the rest of the path.
	s.mux.HandleFunc("GET /models/{id...}", s.withModelAdmin(s.showModel))
	s.admin("DELETE /models/{id...}", s.withModelAdmin(s.removeModel))
}

type modelHandler func(w http.ResponseWriter, r *http.Request, m ModelAdmin)

// withModelAdmin answers 404 when the node does not manage models.
func (s *server) withModelAdmin(h modelHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m := s.models
		if m == nil {
			s.writeError(w, r, fault.Errorf(fault.ClassNotFound, "this node does not manage a model catalog (%s %s)", fault.Clip(r.Method), fault.Clip(r.URL.Path)))
			return
		}
		h(w, r, m)
	}
}

// POST /models/add {"ref": "hf:OWNER/REPO[/FILE.gguf][@REV]", "id": ""}
func (s *server) addModel(w http.ResponseWriter, r *http.Request, m ModelAdmin) {
	var req modeladmin.AddModelRequest
	if !s.decodeStrict(w, r, &req, "ref, id") {
		return
	}
	if strings.TrimSpace(req.Ref) == "" {
		s.writeError(w, r, fault.ParamErrorf("ref", "ref is required, e.g. {\"ref\": \"hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF\"}"))
		return
	}
	if !s.validOptionalID(w, r, req.ID) {
		return
	}
	s.answer(w, r, func(ctx context.Context) (any, error) { return m.AddModel(ctx, req) })
}

// POST /models/import {"path": "/abs/file.gguf", "id": ""}
func (s *server) importModel(w http.ResponseWriter, r *http.Request, m ModelAdmin) {
	var req modeladmin.ImportModelRequest
	if !s.decodeStrict(w, r, &req, "path, id") {
		return
	}
	if req.Path == "" || !strings.HasPrefix(req.Path, "/") {
		s.writeError(w, r, fault.ParamErrorf("path", "path must be an absolute path of a GGUF file on the node's machine, got %s", fault.Quote(req.Path)))
		return
	}
	if !s.validOptionalID(w, r, req.ID) {
		return
	}
	req.FromLoopback = isLoopback(r.RemoteAddr)
	s.answer(w, r, func(ctx context.Context) (any, error) { return m.ImportModel(ctx, req) })
}

// POST /models/pull {"model_id": "..."}
func (s *server) pullModel(w http.ResponseWriter, r *http.Request, m ModelAdmin) {
	var req struct {
		ModelID ids.ModelID `json:"model_id"`
	}
	if !s.decodeStrict(w, r, &req, "model_id") {
		return
	}
	if !s.validModelID(w, r, "model_id", req.ModelID) {
		return
	}
	s.answer(w, r, func(ctx context.Context) (any, error) { return m.PullModel(ctx, req.ModelID) })
}

// GET /models/{id...}
func (s *server) showModel(w http.ResponseWriter, r *http.Request, m ModelAdmin) {
	s.showModelID(w, r, m, ids.ModelID(r.PathValue("id")))
}

func (s *server) showModelID(w http.ResponseWriter, r *http.Request, m ModelAdmin, id ids.ModelID) {
	if !s.validModelID(w, r, "id", id) {
		return
	}
	s.answer(w, r, func(ctx context.Context) (any, error) { return m.ShowModel(ctx, id) })
}

// GET /models/upload/{sha256}: how many bytes of the file the node holds.
// A second segment that is no SHA-256 names a model (ids may hold "/").
func (s *server) uploadStatus(w http.ResponseWriter, r *http.Request, m ModelAdmin) {
	digest := r.PathValue("sha256")
	if !isDigest(digest) {
		s.showModelID(w, r, m, ids.ModelID("upload/"+digest))
		return
	}
	s.answer(w, r, func(ctx context.Context) (any, error) { return m.UploadStatus(ctx, digest) })
}

// PUT /models/upload/{sha256}?name=FILE.gguf&id=ID with the file's bytes
// as the body, all of them or the range its Content-Range names; the
// body is streamed to disk, never held in memory.
func (s *server) uploadModel(w http.ResponseWriter, r *http.Request, m ModelAdmin) {
	q := r.URL.Query()
	rng, err := modeladmin.ParseContentRange(r.Header.Get("Content-Range"), r.ContentLength)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !s.validOptionalID(w, r, q.Get("id")) {
		return
	}
	req := modeladmin.UploadRequest{Digest: r.PathValue("sha256"), Name: q.Get("name"), ID: q.Get("id"), Range: rng}
	doc, err := m.UploadModel(r.Context(), req, r.Body)
	if err != nil {
		if _, ok := errors.AsType[*modeladmin.UploadIncompleteError](err); ok {
			// What is left of the body may still be on its way.
			w.Header().Set("Connection", "close")
		}
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, doc)
}

// isDigest reports whether s is a SHA-256 in lower-case hex.
func isDigest(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}

// DELETE /models/{id...}?files=true
func (s *server) removeModel(w http.ResponseWriter, r *http.Request, m ModelAdmin) {
	id := ids.ModelID(r.PathValue("id"))
	if !s.validModelID(w, r, "id", id) {
		return
	}
	files := false
	if v := r.URL.Query().Get("files"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.writeError(w, r, fault.ParamErrorf("files", "files must be true or false, got %s", fault.Quote(v)))
			return
		}
		files = b
	}
	s.answer(w, r, func(ctx context.Context) (any, error) { return m.RemoveModel(ctx, id, files) })
}

// GET /models/requirements?model_id=&context=
func (s *server) modelRequirements(w http.ResponseWriter, r *http.Request, m ModelAdmin) {
	q := r.URL.Query()
	id := ids.ModelID(q.Get("model_id"))
	if !s.validModelID(w, r, "model_id", id) {
		return
	}
	ctxTokens := 0
	if v := q.Get("context"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxContextTokens {
			s.writeError(w, r, fault.ParamErrorf("context", "context must be a number of tokens between 0 and %d, got %s", MaxContextTokens, fault.Quote(v)))
			return
		}
		ctxTokens = n
	}
	s.answer(w, r, func(ctx context.Context) (any, error) { return m.ModelRequirements(ctx, id, ctxTokens) })
}

// GET /models/search?q=&limit=
func (s *server) searchModels(w http.ResponseWriter, r *http.Request, m ModelAdmin) {
	q := r.URL.Query()
	query := strings.TrimSpace(q.Get("q"))
	if query == "" || len(query) > MaxSearchQuery {
		s.writeError(w, r, fault.ParamErrorf("q", "q must be 1-%d characters, e.g. /models/search?q=qwen", MaxSearchQuery))
		return
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			s.writeError(w, r, fault.ParamErrorf("limit", "limit must be between 1 and 100, got %s", fault.Quote(v)))
			return
		}
		limit = n
	}
	s.answer(w, r, func(ctx context.Context) (any, error) { return m.SearchModels(ctx, query, limit) })
}

// GET /models/library
func (s *server) modelLibrary(w http.ResponseWriter, r *http.Request, m ModelAdmin) {
	s.answer(w, r, m.Library)
}

// answer writes what f returns, or its error.
func (s *server) answer(w http.ResponseWriter, r *http.Request, f func(context.Context) (any, error)) {
	doc, err := f(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, doc)
}

// decodeStrict reads a JSON object body into v, refusing unknown fields
// (known names the fields for the message). It answers the error itself.
func (s *server) decodeStrict(w http.ResponseWriter, r *http.Request, v any, known string) bool {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		s.writeError(w, r, fault.Errorf(fault.ClassInvalid, "the request body is empty; send a JSON object with %s", known))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			field = fault.Clip(strings.Trim(field, `"`))
			s.writeError(w, r, fault.ParamErrorf(field, "unknown field %s; known fields are %s", fault.Quote(field), known))
			return false
		}
		s.writeError(w, r, placeDecodeError(err))
		return false
	}
	if dec.More() {
		s.writeError(w, r, fault.Errorf(fault.ClassInvalid, "the request body holds more than one JSON value"))
		return false
	}
	return true
}

func (s *server) validModelID(w http.ResponseWriter, r *http.Request, param string, id ids.ModelID) bool {
	if id == "" {
		s.writeError(w, r, fault.ParamErrorf(param, "%s is required", param))
		return false
	}
	if err := id.Validate(); err != nil {
		s.writeError(w, r, fault.ParamErrorf(param, "%s: %v", param, err))
		return false
	}
	return true
}

func (s *server) validOptionalID(w http.ResponseWriter, r *http.Request, id string) bool {
	if id == "" {
		return true
	}
	return s.validModelID(w, r, "id", ids.ModelID(id))
}
