// Package gateway is the node's front door to the cluster. It serves the
// HTTP API's requests: generation and embedding go straight to the node of
// the chosen instance's first rank (in process, or over the data plane:
// Remote, ServeTask), never through the control plane; placement, deletion
// and tracing are commands to the master; and it answers the API's reads of
// the cluster (GET /state, previews, the ready models, diagnostics) and
// looks stored Responses conversations up on the other nodes
// (PeerResponses).
//
// It implements the API's Backend, all but the catalog, with the request
// types of packages admin and infer and without importing the API; the node
// wires it in beside model administration (package modeladmin).
package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/observe/trace"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
)

// Master is the control plane as the gateway uses it.
type Master interface {
	Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error)
	State(ctx context.Context) (state.State, error)
}

// A task runs on the node that holds its instance's first rank: this node
// (Config.Local, the worker in process) or another (Config.Remote, over the
// data plane). Either returns the task's chunk stream; cancelling ctx
// cancels the task there. The goroutine that produces the stream calls
// request.TapFrom(ctx)'s Chunk with each chunk before passing it on and its
// End once when it stops (as worker.Serve and Remote.Serve do): that is how
// the gateway observes a task and counts it in flight.

// RemoteServe runs a task on another node (Remote.Serve).
type RemoteServe func(ctx context.Context, node ids.NodeID, inst ids.InstanceID, task ids.TaskID, p request.TaskPayload) (<-chan request.Chunk, error)

// Config wires a gateway.
type Config struct {
	Node   ids.NodeID
	Master Master
	// Local runs a task on this node; Remote on another.
	Local   LocalServe
	Remote  RemoteServe
	Catalog func() *catalog.Catalog
	// Nodes reports the live nodes' resources, for previews and /state.
	Nodes func() []placement.Node
	// Health reports node health for the GET /state overlay.
	Health func(st state.State) map[ids.NodeID]NodeHealth
	// Diagnostics builds GET /v1/diagnostics/cluster.
	Diagnostics func(ctx context.Context) (any, error)
	NewID       func() string
	Logger      *slog.Logger
	// Observer, when set, hears how this node's tasks go (for metrics).
	Observer Observer
	// Now is the clock of the Observer's timings and of the idle clock
	// (default time.Now).
	Now func() time.Time
	// KeepAlive is how long an instance placed on demand stays loaded idle
	// after a request that names no keep-alive (SKULK_KEEP_ALIVE); 0
	// unloads it right after, negative never.
	KeepAlive time.Duration
	// LoadTimeout bounds a request's wait for a model placed on demand
	// (default DefaultLoadTimeout).
	LoadTimeout time.Duration
	// Resolve, when set, maps a model name the catalog does not hold to
	// the catalog's id for it (a short name of the library: qwen3 is
	// qwen3:8b), or returns the not-found error that answers the request
	// (with the names it may have meant). Nil refuses such names.
	Resolve func(name string) (string, error)
}

// Observer hears how the tasks this node owns go, streamed or not, as their
// chunks leave the goroutines that produce them. Its methods are called
// from those goroutines, must be safe for concurrent use and must return
// at once.
type Observer interface {
	// FirstToken is the wait from the hand-over to a generation's first
	// output (text or a tool call).
	FirstToken(model string, d time.Duration)
	// TokenGap is the time between two consecutive outputs.
	TokenGap(model string, d time.Duration)
	// Tokens is a finished task's usage, from its final chunk.
	Tokens(model string, prompt, generated int)
	// Timings are a finished generation's timings, from its final chunk:
	// the prompt tokens the prefix cache served and the runner's prompt
	// and decode times.
	Timings(model string, cached int, prompt, decode time.Duration)
}

// Gateway is the owner side of the requests this
// node's API accepts. It picks an instance from the replicated State and
// hands the request straight to the node that runs it; the control plane
// sees placements, not requests.
type Gateway struct {
	cfg Config

	mu       sync.Mutex // guards inflight, placing and uses; held only for map operations
	inflight map[ids.InstanceID]int
	// placing holds the on-demand placements this node's requests are
	// making, one per model.
	placing map[ids.ModelID]*placing
	// uses is the idle clock of the on-demand instances whose first rank
	// runs here.
	uses map[ids.InstanceID]*use
}

// New returns a gateway.
func New(cfg Config) *Gateway {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Gateway{cfg: cfg, inflight: map[ids.InstanceID]int{}, placing: map[ids.ModelID]*placing{}, uses: map[ids.InstanceID]*use{}}
}

// Generate picks a ready instance of the request's model from the
// replicated State, hands the request to the node that runs it, and returns
// the chunk stream. Cancelling ctx cancels the task there. A catalog model
// without a ready instance is placed on demand first (ensureReady); nothing
// is streamed until it is ready.
func (g *Gateway) Generate(ctx context.Context, req request.Request) (<-chan request.Chunk, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	model, err := g.resolve(req.Model)
	if err != nil {
		return nil, err
	}
	req.Model = model
	if req.KeepAlive == nil {
		ka := g.cfg.KeepAlive
		req.KeepAlive = &ka
	}
	if err := g.ensureReady(ctx, ids.ModelID(req.Model), *req.KeepAlive); err != nil {
		return nil, err
	}
	return g.submit(ctx, req.Model, request.TaskPayload{Generate: &req})
}

// resolve returns the catalog id of the model a request names: the name
// itself when the catalog holds it, else what Config.Resolve maps it to.
func (g *Gateway) resolve(model string) (string, error) {
	if _, ok := g.cfg.Catalog().Get(model); ok {
		return model, nil
	}
	if g.cfg.Resolve != nil {
		return g.cfg.Resolve(model)
	}
	return "", fault.Errorf(fault.ClassNotFound, "unknown model %s (skulk list shows the catalog; skulk models add hf:OWNER/REPO adds one, skulk pull MODEL downloads it)", fault.Quote(model))
}

// submit chooses the ready instance of model with the fewest of this node's
// requests in flight, hands the task to the node of its first rank, and
// returns the chunk stream.
func (g *Gateway) submit(ctx context.Context, model string, payload request.TaskPayload) (<-chan request.Chunk, error) {
	obs := g.observe(model, payload)
	picking := g.cfg.Now()
	st, err := g.cfg.Master.State(ctx)
	if err != nil {
		return nil, err
	}
	// With the cluster's tracing on, the request's spans are recorded:
	// here, on the node that runs it, and in the API that took it.
	var rec *trace.Recorder
	if st.Tracing {
		rec = trace.Begin(ctx, string(g.cfg.Node))
	}
	var live []placement.Node
	if g.cfg.Nodes != nil {
		live = g.cfg.Nodes()
	}
	st, lost := withoutLost(st, ids.ModelID(model), live)
	if lost != nil {
		return nil, lost
	}
	g.mu.Lock()
	inst, err := pickInstance(st, ids.ModelID(model), g.inflight)
	if err == nil {
		g.inflight[inst]++
	}
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	serveCtx := ctx
	var deliver trace.SpanID
	var delivering time.Time
	if rec != nil {
		delivering = g.cfg.Now()
		rec.Add("gateway.pick", 0, rec.Root(), picking, delivering, trace.Attr{Key: "instance", Value: string(inst)})
		deliver = trace.NewSpanID()
		serveCtx = trace.WithScope(ctx, trace.Scope{Rec: rec, Parent: deliver})
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			g.mu.Lock()
			if g.inflight[inst]--; g.inflight[inst] <= 0 {
				delete(g.inflight, inst)
			}
			g.mu.Unlock()
		})
	}
	// The producer of the stream (the worker here, or the reader of the
	// far node's answer) observes each chunk and says when it is done, so
	// no goroutine of the gateway's own stands between it and the API. The
	// request is released when the stream ends, or when the client leaves
	// (ctx ends), whichever comes first.
	stop := context.AfterFunc(ctx, release)
	tap := request.Tap{Chunk: obs.chunk, End: func() { stop(); release() }}
	runs := st.Instances[inst].Placement[0].Node
	task, tctx := ids.TaskID(g.cfg.NewID()), request.WithTap(serveCtx, tap)
	var chunks <-chan request.Chunk
	if runs == g.cfg.Node {
		chunks, err = g.Serve(tctx, inst, task, payload)
	} else {
		chunks, err = g.cfg.Remote(tctx, runs, inst, task, payload)
	}
	if rec != nil {
		rec.Add("deliver", deliver, rec.Root(), delivering, g.cfg.Now(), trace.Attr{Key: "to", Value: string(runs)})
	}
	if err != nil {
		tap.Done()
		return nil, err
	}
	return chunks, nil
}

// taskObservation times one task's outputs for the Observer; it lives on
// the goroutine that produces the task's stream (through its request.Tap).
// The zero value observes nothing.
type taskObservation struct {
	o        Observer
	now      func() time.Time
	model    string
	tokens   bool      // a generation, whose outputs are timed
	start    time.Time // the hand-over
	last     time.Time // the latest output; zero before the first
	finished bool
}

// observe starts the observation of a task: a generation's outputs are
// timed and its usage counted, an embedding's usage counted, and a
// count-only request (which runs no model) not observed at all.
func (g *Gateway) observe(model string, p request.TaskPayload) *taskObservation {
	if g.cfg.Observer == nil || p.Generate != nil && p.Generate.CountOnly {
		return &taskObservation{}
	}
	return &taskObservation{o: g.cfg.Observer, now: g.cfg.Now, model: model, tokens: p.Generate != nil, start: g.cfg.Now()}
}

func (t *taskObservation) chunk(c *request.Chunk) {
	if t.o == nil || t.finished {
		return
	}
	switch {
	case c.Kind == request.ChunkDone:
		t.finished = true
		if c.Usage != nil {
			t.o.Tokens(t.model, c.Usage.PromptTokens, c.Usage.CompletionTokens)
		}
		if c.Usage != nil && c.Usage.Timings != nil {
			ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
			tm := c.Usage.Timings
			t.o.Timings(t.model, tm.CacheN, ms(tm.PromptMs), ms(tm.PredictedMs))
		}
	case c.Kind == request.ChunkError:
		t.finished = true
	case !t.tokens || c.Kind == request.ChunkDelta && c.Content == "" && c.Reasoning == "":
		// the prompt count ahead of the answer, or logprobs alone
	default:
		now := t.now()
		if t.last.IsZero() {
			t.o.FirstToken(t.model, now.Sub(t.start))
		} else {
			t.o.TokenGap(t.model, now.Sub(t.last))
		}
		t.last = now
	}
}

// Inflight reports how many of this node's requests each instance serves.
func (g *Gateway) Inflight() map[ids.InstanceID]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.inflight)
}

// Models lists the models with a ready instance.
func (g *Gateway) Models(ctx context.Context) ([]request.ModelInfo, error) {
	st, err := g.cfg.Master.State(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[ids.ModelID]int64{}
	for _, inst := range st.Instances {
		if inst.Status == state.InstanceReady {
			if t, ok := seen[inst.Model]; !ok || inst.CreatedAtUnixMs < t {
				seen[inst.Model] = inst.CreatedAtUnixMs
			}
		}
	}
	out := make([]request.ModelInfo, 0, len(seen))
	for m, t := range seen {
		out = append(out, request.ModelInfo{ID: string(m), OwnedBy: "skulk", Created: time.UnixMilli(t)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// StateDocument is the GET /state answer: the replicated State plus this
// node's view of it and the live readings.
type StateDocument struct {
	state.State
	LastAppliedIndex ids.Index        `json:"lastAppliedIndex"`
	StateHash        string           `json:"stateHash"`
	NodeResources    []placement.Node `json:"nodeResources"`
	// NodeHealth says, for every node the State or the membership knows,
	// whether it is healthy and why not.
	NodeHealth map[ids.NodeID]NodeHealth `json:"nodeHealth"`
	// ExpiresAt says when each on-demand instance whose first rank runs
	// on this node unloads if it stays idle (this node keeps its idle
	// clock; see Serve).
	ExpiresAt map[ids.InstanceID]time.Time `json:"expiresAt,omitempty"`
}

// NodeHealth is one node's health as this node sees it.
type NodeHealth struct {
	Healthy bool `json:"healthy"`
	// Status is ok, unhealthy (Reasons says why) or error: the node's
	// writes are not durable (Persistence says why and what to do).
	Status  string   `json:"status"`
	Reasons []string `json:"reasons"` // e.g. unreachable, version_mismatch, telemetry_partial, telemetry_missing, persistence_degraded, history_lost
	// Persistence lists what keeps the node from keeping what it decides:
	// a store that stopped writing, or history its log lost.
	Persistence []PersistenceIssue `json:"persistence,omitempty"`
}

// Health statuses.
const (
	HealthOK        = "ok"
	HealthUnhealthy = "unhealthy"
	HealthError     = "error"
)

// PersistenceIssue is one reason a node's writes are not durable.
type PersistenceIssue struct {
	Store   string `json:"store"`   // event_log or response_journal
	Problem string `json:"problem"` // degraded (not writing) or history_lost
	// Message says what happened and what to do.
	Message string `json:"message"`
	// Dir is the directory whose disk it concerns; FreeBytes and
	// FloorBytes are that disk's free space and the floor under which the
	// store does not write (0 when there is none).
	Dir        string `json:"dir,omitempty"`
	FreeBytes  uint64 `json:"freeBytes,omitempty"`
	FloorBytes uint64 `json:"floorBytes,omitempty"`
	// LostAfter is, for history_lost, the index after which the node's
	// log lost its history.
	LostAfter uint64 `json:"lostAfter,omitempty"`
}

// State returns the GET /state document.
func (g *Gateway) State(ctx context.Context) (any, error) {
	st, err := g.cfg.Master.State(ctx)
	if err != nil {
		return nil, err
	}
	h := state.Hash(st)
	doc := StateDocument{State: st, LastAppliedIndex: st.LastIndex, StateHash: fmt.Sprintf("%x", h[:])}
	doc.APIKeys = redactedKeys(st.APIKeys)
	doc.AddedKeys = redactedAdded(st.AddedKeys)
	doc.ExpiresAt = g.Expiries(st)
	if g.cfg.Nodes != nil {
		doc.NodeResources = g.cfg.Nodes()
	}
	if g.cfg.Health != nil {
		doc.NodeHealth = g.cfg.Health(st)
	}
	return doc, nil
}

// redactedKeys shows which keys each node set (names and scopes) without
// their digests: a reader of /state learns nothing to test guesses against.
func redactedKeys(keys map[ids.NodeID][]event.APIKey) map[ids.NodeID][]event.APIKey {
	if len(keys) == 0 {
		return nil
	}
	out := make(map[ids.NodeID][]event.APIKey, len(keys))
	for n, ks := range keys {
		for _, k := range ks {
			out[n] = append(out[n], event.APIKey{Name: k.Name, Scope: k.Scope, Digest: "redacted"})
		}
	}
	return out
}

// redactedAdded shows the run-time keys (names, scopes, who added them and
// when) without their digests.
func redactedAdded(keys map[string]event.AddedAPIKey) map[string]event.AddedAPIKey {
	if len(keys) == 0 {
		return nil
	}
	out := make(map[string]event.AddedAPIKey, len(keys))
	for name, k := range keys {
		k.Digest = "redacted"
		out[name] = k
	}
	return out
}

// Place submits a placement; the planner's refusal comes back synchronously.
func (g *Gateway) Place(ctx context.Context, req request.PlaceRequest) (request.PlaceResult, error) {
	if req.MinNodes < 0 || req.ContextTokens < 0 {
		return request.PlaceResult{}, fault.ParamErrorf("min_nodes", "min_nodes and context_tokens must not be negative")
	}
	// A short name of the library places the catalog's model; any other
	// name is the master's to refuse.
	if _, ok := g.cfg.Catalog().Get(string(req.ModelID)); !ok && g.cfg.Resolve != nil {
		if model, err := g.cfg.Resolve(string(req.ModelID)); err == nil {
			req.ModelID = ids.ModelID(model)
		}
	}
	// Excluded nodes go by id, a unique prefix of it, or name.
	if len(req.ExcludedNodes) > 0 {
		st, err := g.cfg.Master.State(ctx)
		if err != nil {
			return request.PlaceResult{}, err
		}
		var live []placement.Node
		if g.cfg.Nodes != nil {
			live = g.cfg.Nodes()
		}
		excluded := make([]ids.NodeID, 0, len(req.ExcludedNodes))
		for _, ref := range req.ExcludedNodes {
			n, err := ResolveNode(st.NodeIDs(), live, string(ref))
			if fault.ClassOf(err) == fault.ClassNotFound {
				// A node the cluster does not know now may come: excluded
				// by that id all the same.
				n, err = ref, nil
			}
			if err != nil {
				return request.PlaceResult{}, err
			}
			excluded = append(excluded, n)
		}
		req.ExcludedNodes = excluded
	}
	id := ids.CommandID(g.cfg.NewID())
	_, err := g.cfg.Master.Execute(ctx, event.PlaceInstance{ID: id, Model: req.ModelID, MinNodes: uint32(req.MinNodes),
		ExcludedNodes: req.ExcludedNodes, ContextTokens: uint32(req.ContextTokens), CacheType: req.CacheType,
		Speculative: req.Speculative, DraftModel: ids.ModelID(req.DraftModel)})
	if err != nil {
		return request.PlaceResult{}, err
	}
	return request.PlaceResult{InstanceID: id.Instance()}, nil
}

// Previews lists what each placement width of a model would use.
func (g *Gateway) Previews(ctx context.Context, model ids.ModelID) (any, error) {
	card, ok := g.cfg.Catalog().Get(string(model))
	if !ok {
		return nil, fault.Errorf(fault.ClassNotFound, "unknown model %s (GET /models lists the catalog)", fault.Quote(model))
	}
	st, err := g.cfg.Master.State(ctx)
	if err != nil {
		return nil, err
	}
	var nodes []placement.Node
	if g.cfg.Nodes != nil {
		nodes = g.cfg.Nodes()
	}
	// Charged as the master's planner charges them, so a preview shows the
	// room the runners already placed leave, not the telemetry's.
	nodes = placement.Charged(nodes, catalog.Running(st, func(id ids.ModelID) (catalog.Card, bool) { return g.cfg.Catalog().Get(string(id)) }, ""))
	pv, err := placement.Previews(card.PlacementModel(), nodes)
	if err != nil {
		return nil, err
	}
	// The same widths with each KV cache type a placement's cache_type may
	// name: a quantized cache holds 1.9× (q8_0) or 3.6× (q4_0) the context.
	// A head_dim (or value_dim) that is no whole number of their blocks
	// cannot use them.
	byType := map[string][]placement.Preview{}
	for _, t := range []string{placement.KVCacheF16, placement.KVCacheQ8_0, placement.KVCacheQ4_0, placement.KVCacheF32} {
		if (t == placement.KVCacheQ8_0 || t == placement.KVCacheQ4_0) && (card.HeadDim%32 != 0 || card.ValueDim%32 != 0) {
			continue
		}
		if byType[t], err = placement.Previews(card.WithCacheType(t).PlacementModel(), nodes); err != nil {
			return nil, err
		}
	}
	cacheType := card.Runtime.KVCacheType
	if cacheType == "" {
		cacheType = placement.KVCacheF16
	}
	return map[string]any{"model_id": model, "cache_type": cacheType, "previews": pv, "previews_by_cache_type": byType}, nil
}

// DeleteInstance tears an instance down.
func (g *Gateway) DeleteInstance(ctx context.Context, id ids.InstanceID) error {
	_, err := g.cfg.Master.Execute(ctx, event.DeleteInstance{ID: ids.CommandID(g.cfg.NewID()), Instance: id})
	return err
}

// Diagnostics returns the cluster diagnostics document.
func (g *Gateway) Diagnostics(ctx context.Context) (any, error) {
	if g.cfg.Diagnostics == nil {
		return nil, fault.Errorf(fault.ClassNotFound, "diagnostics are not available on this node")
	}
	return g.cfg.Diagnostics(ctx)
}

// SetTracing sets the cluster-wide tracing flag.
func (g *Gateway) SetTracing(ctx context.Context, enabled bool) error {
	_, err := g.cfg.Master.Execute(ctx, event.SetTracingEnabled{ID: ids.CommandID(g.cfg.NewID()), Enabled: enabled})
	return err
}
