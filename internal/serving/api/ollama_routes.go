package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/version"
	"github.com/skulk/skulk/internal/serving/api/ollama"
	"github.com/skulk/skulk/internal/serving/request"
)

// ollamaRoutes registers the routes of Ollama: /api/chat, /api/generate, /api/tags, /api/show, /api/ps, /api/version, /api/embed, /api/embeddings.
// Every answer under /api/, errors included, is in Ollama's shape.
func (s *server) ollamaRoutes() {
	s.mux.HandleFunc("POST /api/chat", s.ollamaChat)
	s.mux.HandleFunc("POST /api/generate", s.ollamaGenerate)
	s.mux.HandleFunc("GET /api/tags", s.ollamaTags)
	s.mux.HandleFunc("POST /api/show", s.ollamaShow)
	s.mux.HandleFunc("GET /api/ps", s.ollamaPS)
	s.mux.HandleFunc("GET /api/version", s.ollamaVersion)
	s.mux.HandleFunc("POST /api/embed", s.ollamaEmbed)
	s.mux.HandleFunc("POST /api/embeddings", s.ollamaEmbed)
	s.mux.HandleFunc("/api/", s.ollamaOther)
}

// ollamaMethods are the methods of the Ollama routes, for the 405 answer of
// the catch-all route.
var ollamaMethods = map[string]string{
	"/api/chat": "POST", "/api/generate": "POST", "/api/show": "POST",
	"/api/embed": "POST", "/api/embeddings": "POST",
	"/api/tags": "GET, HEAD", "/api/ps": "GET, HEAD", "/api/version": "GET, HEAD",
}

// ollamaManagement are Ollama's model-management routes, which Skulk does
// differently: models come from the catalog and run where they are placed.
var ollamaManagement = []string{"/api/pull", "/api/push", "/api/create", "/api/copy", "/api/delete", "/api/blobs/"}

// ollamaOther answers every other path under /api/ in Ollama's error shape:
// 405 for a known route with the wrong method, 501 for model management,
// 404 otherwise.
func (s *server) ollamaOther(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if allow, ok := ollamaMethods[p]; ok {
		w.Header().Set("Allow", allow)
		s.writeStatus(w, r, http.StatusMethodNotAllowed, fault.Errorf(fault.ClassInvalid, "method %s is not allowed on %s; allowed: %s", fault.Clip(r.Method), p, allow))
		return
	}
	if slices.ContainsFunc(ollamaManagement, func(m string) bool { return p == m || strings.HasSuffix(m, "/") && strings.HasPrefix(p, m) }) {
		s.writeStatus(w, r, http.StatusNotImplemented, fault.Errorf(fault.ClassInvalid,
			"%s is not supported: Skulk serves the models of its catalog (GET /models; add one with POST /models/add) where they are placed (POST /place_instance)", fault.Clip(p)))
		return
	}
	s.writeStatus(w, r, http.StatusNotFound, fault.Errorf(fault.ClassNotFound, "no route for %s %s", fault.Clip(r.Method), fault.Clip(p)))
}

// ollamaFormat is one generation endpoint of Ollama: how to decode its
// request and encode its answers.
type ollamaFormat[T any] struct {
	decode         func([]byte) (ollama.Decoded, error)
	newStream      func(model string, start time.Time) ollamaStream[T]
	newAccumulator func(model string, start time.Time) ollamaAccumulator[T]
	loaded         func(model, reason string, at time.Time) T
}

type ollamaStream[T any] interface {
	Encode(request.Chunk, time.Time) []T
}

type ollamaAccumulator[T any] interface {
	Add(request.Chunk, time.Time)
	Result() T
}

func (s *server) ollamaChat(w http.ResponseWriter, r *http.Request) {
	serveOllama(s, w, r, ollamaFormat[ollama.ChatResponse]{
		decode: ollama.DecodeChatRequest,
		newStream: func(m string, t time.Time) ollamaStream[ollama.ChatResponse] {
			return ollama.NewChatStream(m, t)
		},
		newAccumulator: func(m string, t time.Time) ollamaAccumulator[ollama.ChatResponse] {
			return ollama.NewChatAccumulator(m, t)
		},
		loaded: ollama.ChatLoaded,
	})
}

func (s *server) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	serveOllama(s, w, r, ollamaFormat[ollama.GenerateResponse]{
		decode: ollama.DecodeGenerateRequest,
		newStream: func(m string, t time.Time) ollamaStream[ollama.GenerateResponse] {
			return ollama.NewGenerateStream(m, t)
		},
		newAccumulator: func(m string, t time.Time) ollamaAccumulator[ollama.GenerateResponse] {
			return ollama.NewGenerateAccumulator(m, t)
		},
		loaded: ollama.GenerateLoaded,
	})
}

// serveOllama decodes a generation request, starts the task and answers
// with its NDJSON stream or its aggregate.
func serveOllama[T any](s *server, w http.ResponseWriter, r *http.Request, f ollamaFormat[T]) {
	start := s.cfg.Now()
	d, ok := decodeBody(s, w, r, f.decode)
	if !ok {
		return
	}
	model := d.Request.Model
	if d.Load {
		// Ollama's idioms: load the model (placed on demand when it has no
		// instance), or with keep_alive 0 unload it.
		unloaded, err := s.inference.Load(r.Context(), model, d.Request.KeepAlive)
		if err != nil {
			s.writeError(w, r, ollamaModelError(model, err))
			return
		}
		reason := ollama.DoneLoad
		if unloaded {
			reason = ollama.DoneUnload
		}
		s.writeJSON(w, http.StatusOK, f.loaded(model, reason, s.cfg.Now()))
		return
	}
	// The task lives exactly as long as this handler: returning (the answer
	// is done, a write failed, the client left) cancels it.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	chunks, err := s.generate(ctx, d.Request)
	if err != nil {
		s.writeError(w, r, ollamaModelError(model, err))
		return
	}
	if d.Stream {
		streamOllama(ctx, s, w, r, model, chunks, f.newStream(model, start))
		return
	}
	acc := f.newAccumulator(model, start)
	if err, ok := collect(ctx, chunks, func(c request.Chunk) { acc.Add(c, s.cfg.Now()) }); !ok {
		return // the client left; nobody reads an answer
	} else if err != nil {
		s.writeError(w, r, ollamaModelError(model, err))
		return
	}
	s.writeJSON(w, http.StatusOK, acc.Result())
}

// ollamaModelError words a not-found error about the requested model as
// Ollama does ("model 'x' not found"), keeping the cluster's explanation.
func ollamaModelError(model string, err error) error {
	if e, ok := errors.AsType[*fault.Error](err); ok && e.Class == fault.ClassNotFound {
		return ollama.ModelNotFound(model, e.Message)
	}
	return err
}

// streamOllama sends a task's chunks as NDJSON lines. Nothing is written
// until the first chunk arrives, so a task that fails at once is answered
// with an ordinary error response; an error after that is sent as a last
// line {"error": "..."}.
func streamOllama[T any](ctx context.Context, s *server, w http.ResponseWriter, r *http.Request, model string, chunks <-chan request.Chunk, enc ollamaStream[T]) {
	rc := http.NewResponseController(w)
	started := false
	for {
		c, ok := next(ctx, chunks)
		if !ok {
			return
		}
		if c.Kind == request.ChunkError {
			e := chunkError(c)
			if !started {
				s.writeError(w, r, ollamaModelError(model, e))
				return
			}
			s.log.Warn("http stream error", "method", r.Method, "path", r.URL.Path, "class", e.Class, "message", e.Message)
			_ = sendLine(rc, w, ollama.ErrorFrom(e))
			return
		}
		if !started {
			started = true
			h := w.Header()
			h.Set("Content-Type", "application/x-ndjson")
			h.Set("Cache-Control", "no-cache")
			h.Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
		}
		for _, obj := range enc.Encode(c, s.cfg.Now()) {
			if err := sendLine(rc, w, obj); err != nil {
				return // the client left; returning cancels the task
			}
		}
		if c.Kind == request.ChunkDone {
			return
		}
	}
}

// sendLine writes v as one NDJSON line and flushes it.
func sendLine(rc *http.ResponseController, w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return err
	}
	return rc.Flush()
}

// readyModel returns the ready model named model, or Ollama's not-found
// error.
func (s *server) readyModel(ctx context.Context, model string) (request.ModelInfo, error) {
	models, err := s.inference.Models(ctx)
	if err != nil {
		return request.ModelInfo{}, err
	}
	for _, m := range models {
		if m.ID == model {
			return m, nil
		}
	}
	return request.ModelInfo{}, ollama.ModelNotFound(model, "it has no ready instance; GET /api/tags lists the models that have one")
}

// catalogCards reads the catalog's cards. The listings (tags, ps) log a
// catalog that cannot be read and answer without card details rather than
// fail; show fails.
func (s *server) catalogCards(ctx context.Context) ([]ollama.Card, error) {
	if s.cluster == nil {
		return nil, fault.Errorf(fault.ClassNotFound, "this node serves no model catalog")
	}
	doc, err := s.cluster.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return ollama.ParseCatalog(b)
}

// GET /api/tags: the models with a ready instance, and the installed
// ones a request loads on demand.
func (s *server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	models, err := s.inference.Models(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cards, err := s.catalogCards(r.Context())
	if err != nil {
		s.log.Warn("ollama tags: catalog unavailable; listing without details", "err", err)
	}
	ready := make([]ollama.ReadyModel, len(models))
	for i, m := range models {
		ready[i] = ollama.ReadyModel{Name: m.ID, Created: m.Created}
	}
	s.writeJSON(w, http.StatusOK, ollama.Tags(ready, cards))
}

// GET /api/ps: the ready instances.
func (s *server) ollamaPS(w http.ResponseWriter, r *http.Request) {
	if s.cluster == nil {
		s.writeError(w, r, fault.Errorf(fault.ClassNotFound, "this node serves no cluster state"))
		return
	}
	doc, err := s.cluster.State(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := json.Marshal(doc)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	instances, err := ollama.ParseInstances(b)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cards, err := s.catalogCards(r.Context())
	if err != nil {
		s.log.Warn("ollama ps: catalog unavailable; listing without details", "err", err)
	}
	s.writeJSON(w, http.StatusOK, ollama.PS(instances, cards))
}

// POST /api/show: a catalog model's details.
func (s *server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeBody(s, w, r, ollama.DecodeShowRequest)
	if !ok {
		return
	}
	cards, err := s.catalogCards(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	i := slices.IndexFunc(cards, func(c ollama.Card) bool { return c.ID == req.Model })
	if i < 0 {
		s.writeError(w, r, ollama.ModelNotFound(req.Model, "it is not in the catalog (GET /models lists it)"))
		return
	}
	var modified time.Time
	if m, err := s.readyModel(r.Context(), req.Model); err == nil {
		modified = m.Created
	}
	s.writeJSON(w, http.StatusOK, ollama.Show(cards[i], modified))
}

// GET /api/version
func (s *server) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, ollama.VersionResponse{Version: ollama.Version,
		SkulkVersion: version.Version(), SkulkCommit: version.Commit()})
}

// ollamaEmbedder is the optional Inference capability behind POST /api/embed
// and POST /api/embeddings: one vector per input, or an error whose class
// says why.
type ollamaEmbedder interface {
	Embed(ctx context.Context, req request.EmbedRequest) (request.EmbedResult, error)
}

// POST /api/embed and POST /api/embeddings. An Inference without an embedding
// path answers 501 (after the request is checked, so a client learns of its
// own mistakes first). An empty input is Ollama's "load" idiom: no vectors,
// for a model with a ready instance.
func (s *server) ollamaEmbed(w http.ResponseWriter, r *http.Request) {
	start := s.cfg.Now()
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	legacy := r.URL.Path == "/api/embeddings"
	decode := ollama.DecodeEmbedRequest
	if legacy {
		decode = ollama.DecodeEmbeddingsRequest
	}
	req, err := decode(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e, ok := s.inference.(ollamaEmbedder)
	if !ok {
		s.writeStatus(w, r, http.StatusNotImplemented, fault.Errorf(fault.ClassUnavailable, "embeddings are not available on this server"))
		return
	}
	var res request.EmbedResult
	if len(req.Inputs) == 0 {
		_, err = s.readyModel(r.Context(), req.Model)
	} else {
		noteModel(r.Context(), req.Model)
		res, err = e.Embed(r.Context(), req)
	}
	if err != nil {
		s.writeError(w, r, ollamaModelError(req.Model, err))
		return
	}
	if legacy {
		s.writeJSON(w, http.StatusOK, ollama.EmbeddingsFrom(res))
		return
	}
	s.writeJSON(w, http.StatusOK, ollama.EmbedFrom(req.Model, res, s.cfg.Now().Sub(start)))
}
