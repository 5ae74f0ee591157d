// Package api is the HTTP shell of a node: the net/http routes of the
// inference endpoints (OpenAI Chat Completions and Completions, OpenAI
// Responses, Anthropic Messages, Ollama, embeddings) and of Skulk's control
// and model-catalog endpoints and GET /metrics, bearer-key authentication,
// request-size limits, SSE and NDJSON streaming, panic recovery, request
// logging and observation (Config.Observe), and the one place where errors
// become status codes and error documents.
//
// The wire formats live in subpackages (openai, anthropic, ollama,
// responses, and wirejson for what they share) as pure translators; this
// package decodes nothing itself but the control bodies, and reaches the
// cluster only through the small interfaces of [Backends], which the node
// fills from the gateway, model administration and its own diagnostics.
//
// The handler returned by [New] is safe for concurrent use. It starts no
// goroutines of its own: each request runs on the net/http goroutine that
// serves it, and a task's chunk stream is read there until it ends or the
// client goes away, which cancels the context handed to Inference.
// Only the node (and tests) should import this package.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/observe/trace"
	"github.com/skulk/skulk/internal/serving/access"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/responsestore"
)

// DefaultMaxBodyBytes bounds request bodies when Config.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 4 << 20

// Config configures the handler. The zero value is usable: no key, the
// default body limit, the wall clock and random ids.
type Config struct {
	// Access returns the access policy in force now (the node rebuilds it
	// as the cluster's keys change). Nil means a fixed policy: APIKey as the
	// only (admin) key when set, else loopback clients only.
	Access func() access.Policy
	// APIKey is the admin key of the fixed policy when Access is nil.
	APIKey string
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// BodyTimeout bounds how long a request body may take to arrive after
	// its headers; a body that takes longer is answered with a 408 and
	// the connection is closed. 0 sets no bound.
	BodyTimeout time.Duration
	// Now is the clock for the created field of answers (default time.Now).
	Now func() time.Time
	// NewID mints the unique part of answer ids (default: 96 random bits
	// in hex).
	NewID func() string
	// Responses stores this node's Responses conversations for
	// previous_response_id (default: a private store).
	Responses *responsestore.Store
	// PeerResponses, when set, is asked for a previous_response_id this
	// node does not hold: the other nodes of the cluster.
	PeerResponses func(ctx context.Context, id string) ([]request.Message, bool)
	// Metrics, when set, serves GET /metrics (a read-only route: any key
	// admits it), the node's Prometheus metrics.
	Metrics http.Handler
	// MetricsPublic (--metrics-public) serves GET /metrics to every
	// address without a key, whatever keys the cluster sets.
	MetricsPublic bool
	// Observe, when set, hears of every request once it is answered (the
	// node counts them for its metrics).
	Observe func(Served)
	// Warning, when set, returns what the answers to requests that change
	// the cluster carry in the WarningHeader ("" for nothing): the node
	// says there when a change may not survive a restart.
	Warning func() string
	// Traces, when set, keeps this node's finished request traces and
	// serves GET /v1/traces/{id} (a read-only route). Every answer carries
	// its request's trace id in the X-Skulk-Trace header; a request is
	// traced (its spans recorded) only while the cluster's tracing flag is
	// on, which the gateway checks as it takes the request.
	Traces *trace.Store
	// Dashboard, when set, serves the web dashboard's page at GET / and its
	// files under GET /assets/, without a key: they hold no data, and the
	// page asks for the key the API needs.
	Dashboard http.Handler
	// DashboardEvents, when set, serves GET /v1/dashboard/events (a
	// read-only route: any key admits it), the dashboard's live stream.
	DashboardEvents http.Handler
	// ClientConn, when set, is told before any route runs which client
	// sent the request: the digest and name of the API key it presented
	// (both "" when it presented no valid one), so the per-client
	// connection limit counts the request's connection under its key. An
	// error refuses the request with its HTTPStatus (429 if it has none)
	// and closes the connection.
	ClientConn func(ctx context.Context, keyDigest, keyName string) error
}

// Served is one answered request, as Config.Observe hears of it.
type Served struct {
	// Route is the pattern the request matched, as registered ("POST
	// /v1/chat/completions"), never the raw path; "" when none matched.
	Route string
	// Model is the model the request named, once it reached Inference
	// ("" for a request that did not get that far, or names none): it
	// comes from the client, so an observer that labels by it must check
	// it against the catalog.
	Model    string
	Status   int
	Duration time.Duration
}

// Backends are the services behind the routes, each a small interface
// defined beside the routes that use it, so a service implements what its
// routes need and no more. Inference is required. A nil one of the others
// leaves its routes unregistered (they answer 404, as on a node without
// them); Models nil answers the /models routes with a 404 that says so.
//
// Errors carry a class as an *fault.Error in their chain, or implement
// HTTPStatus() int (as the placement planner's refusals do); any other
// error is answered as a 500 with a generic message and logged.
type Backends struct {
	Inference   Inference   // generation, embeddings and the ready models
	Cluster     Cluster     // GET /state and GET /models, and the Ollama reads of them
	Placement   Placement   // POST /place_instance, GET /instance/previews, DELETE /instance/{id...}
	Tracing     Tracing     // POST /tracing
	Diagnostics Diagnostics // GET /v1/diagnostics/cluster, and its timeline, the node's and recovery when it has them
	Models      ModelAdmin  // the /models routes of this node's catalog
	Keys        Keys        // the /v1/keys routes: the cluster's run-time API keys
}

// server holds the routes' dependencies; all fields are immutable after New.
type server struct {
	cfg       Config
	inference Inference
	cluster   Cluster
	placement Placement
	tracing   Tracing
	diag      Diagnostics
	models    ModelAdmin
	keys      Keys
	log       *slog.Logger
	mux       *http.ServeMux
	// adminMux holds the admin routes' patterns (with no-op handlers): a
	// request it matches needs the admin scope.
	adminMux *http.ServeMux
	// publicMux holds the patterns served without a key (GET /metrics
	// with MetricsPublic).
	publicMux *http.ServeMux
}

// New returns the API handler. log may be nil (no logs); b.Inference must
// not be.
func New(cfg Config, b Backends, log *slog.Logger) http.Handler {
	if b.Inference == nil {
		panic("api: New without an Inference backend")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = randomID
	}
	if cfg.Access == nil {
		var keys []access.Key
		if cfg.APIKey != "" {
			keys = []access.Key{{Name: "admin", Scope: event.ScopeAdmin, Secret: cfg.APIKey}}
		}
		p := access.Policy{Ring: access.NewRing(access.Hasher{}, keys, nil)}
		cfg.Access = func() access.Policy { return p }
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &server{cfg: cfg, inference: b.Inference, cluster: b.Cluster, placement: b.Placement, tracing: b.Tracing, diag: b.Diagnostics,
		models: b.Models, keys: b.Keys, log: log, mux: http.NewServeMux(), adminMux: http.NewServeMux(), publicMux: http.NewServeMux()}
	s.routes()
	return s.logRequests(s.bodyDeadline(s.recoverPanics(s.authenticate(http.HandlerFunc(s.route)))))
}

func (s *server) routes() {
	s.mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	s.mux.HandleFunc("POST /v1/completions", s.completions)
	s.mux.HandleFunc("GET /v1/models", s.listModels)

	if s.cluster != nil {
		s.mux.HandleFunc("GET /state", s.state)
		s.mux.HandleFunc("GET /models", s.catalog)
	}
	if s.placement != nil {
		s.admin("POST /place_instance", s.placeInstance)
		s.mux.HandleFunc("GET /instance/previews", s.previews)
		s.admin("DELETE /instance/{id...}", s.deleteInstance)
	}
	if s.diag != nil {
		s.mux.HandleFunc("GET /v1/diagnostics/cluster", s.diagnostics)
		s.mux.HandleFunc("GET /v1/diagnostics/cluster/timeline", s.timeline)
		s.mux.HandleFunc("GET /v1/diagnostics/node", s.nodeDiagnostics)
		s.admin("POST /v1/cluster/recover", s.recoverCluster)
	}
	if s.tracing != nil {
		s.admin("POST /tracing", s.setTracing)
	}
	if s.cfg.Traces != nil {
		s.mux.HandleFunc("GET /v1/traces/{id}", s.getTrace)
	}
	if s.cfg.Metrics != nil {
		s.mux.Handle("GET /metrics", s.cfg.Metrics)
		if s.cfg.MetricsPublic {
			s.publicMux.HandleFunc("GET /metrics", func(http.ResponseWriter, *http.Request) {})
		}
	}

	if s.cfg.Dashboard != nil {
		for _, p := range []string{"GET /{$}", "GET /assets/", "GET /favicon.svg"} {
			s.mux.Handle(p, s.cfg.Dashboard)
			s.publicMux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
		}
	}
	if s.cfg.DashboardEvents != nil {
		s.mux.Handle("GET /v1/dashboard/events", s.cfg.DashboardEvents)
	}

	// Each further wire format and route family registers itself from its
	// own file.
	s.anthropicRoutes()
	s.ollamaRoutes()
	s.responsesRoutes()
	s.embeddingRoutes()
	s.modelRoutes()
	s.keyRoutes()
}

// admin registers a route that needs the admin key: one that changes what
// the cluster runs or holds.
func (s *server) admin(pattern string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, h)
	s.adminMux.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
}

// Inference is what the generation, embedding and model-list routes need.
type Inference interface {
	// Generate starts a task and returns its chunk stream. The channel
	// ends after a done or an error chunk. Cancelling ctx cancels the
	// task, and the backend must then stop sending (the API stops reading
	// once ctx is done). An error return means nothing started, e.g. a
	// *fault.Error of class not_found for a model with no ready instance,
	// whose message says how to place it.
	Generate(ctx context.Context, req request.Request) (<-chan request.Chunk, error)
	// Models lists the models that have a ready instance.
	Models(ctx context.Context) ([]request.ModelInfo, error)
	// Load returns once model has a ready instance, placing one on demand
	// (kept idle for keepAlive; nil: the node's default); a keepAlive of 0
	// instead stops the model's instances placed on demand and reports
	// unloaded. Ollama's requests with nothing to generate ask for these.
	Load(ctx context.Context, model string, keepAlive *time.Duration) (unloaded bool, err error)
}

// generate starts a generation, noting its model for the request's
// observation.
func (s *server) generate(ctx context.Context, req request.Request) (<-chan request.Chunk, error) {
	noteModel(ctx, req.Model)
	return s.inference.Generate(ctx, req)
}

// randomID returns 96 random bits in hex.
func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
