// Package gateway is the node's front door to the cluster. It turns the
// HTTP API's requests into commands to the master (generation, embedding,
// placement, deletion, tracing) and answers its reads of the cluster (GET
// /state, previews, the ready models, diagnostics). It is also the owner
// side of the tasks this node's API accepted: it holds each request's
// payload until a runner fetches it, here or over the data plane from
// another node (ServeTask, RemoteTasks), and streams the runner's chunks
// back to the waiting HTTP handler; and it looks stored Responses
// conversations up on the other nodes (PeerResponses).
//
// It implements the API's Backend, all but the catalog, with the request
// types of packages admin and infer and without importing the API; the node
// wires it in beside model administration (package modeladmin).
package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/admin"
	"github.com/skulk/skulk/internal/catalog"
	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
	"github.com/skulk/skulk/internal/master"
	"github.com/skulk/skulk/internal/placement"
	"github.com/skulk/skulk/internal/state"
)

// Master is the control plane as the gateway uses it.
type Master interface {
	Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error)
	State(ctx context.Context) (state.State, error)
}

// Config wires a gateway.
type Config struct {
	Node    ids.NodeID
	Master  Master
	Catalog func() *catalog.Catalog
	// Nodes reports the live nodes' resources, for previews and /state.
	Nodes func() []placement.Node
	// Health reports node health for the GET /state overlay.
	Health func(st state.State) map[ids.NodeID]NodeHealth
	// Diagnostics builds GET /v1/diagnostics/cluster.
	Diagnostics func(ctx context.Context) (any, error)
	NewID       func() string
	Logger      *slog.Logger
}

// Gateway serves the HTTP API's requests to the cluster (the node wires it
// in as most of the API's Backend) and is the worker's Tasks.
type Gateway struct {
	cfg Config

	mu    sync.Mutex // guards tasks; held only for map operations
	tasks map[ids.TaskID]*pending
}

// pending is a task this node owns: its request, and the stream back to the
// HTTP handler waiting for it.
type pending struct {
	payload infer.TaskPayload
	ref     event.PayloadRef
	out     chan infer.Chunk
	gone    chan struct{} // closed when the client stops reading
	once    sync.Once
}

// chunkBuffer lets a runner run ahead of a slow client by this many chunks.
const chunkBuffer = 64

// New returns a gateway.
func New(cfg Config) *Gateway {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Gateway{cfg: cfg, tasks: map[ids.TaskID]*pending{}}
}

// Generate registers the request, asks the master to bind it to an instance,
// and returns the chunk stream. Cancelling ctx cancels the task.
func (g *Gateway) Generate(ctx context.Context, req infer.Request) (<-chan infer.Chunk, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if _, ok := g.cfg.Catalog().Get(req.Model); !ok {
		return nil, infer.Errorf(infer.ClassNotFound, "unknown model %q (GET /models lists the catalog)", req.Model)
	}
	return g.submit(ctx, req.Model, infer.TaskPayload{Generate: &req})
}

// submit registers a task's payload, asks the master to bind it to an
// instance of model, and returns the chunk stream. Cancelling ctx cancels
// the task.
func (g *Gateway) submit(ctx context.Context, model string, payload infer.TaskPayload) (<-chan infer.Chunk, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	task := ids.TaskID(g.cfg.NewID())
	p := &pending{payload: payload, ref: event.PayloadRef{Digest: sha256.Sum256(body), Size: uint64(len(body))},
		out: make(chan infer.Chunk, chunkBuffer), gone: make(chan struct{})}
	g.mu.Lock()
	g.tasks[task] = p
	g.mu.Unlock()
	_, err = g.cfg.Master.Execute(ctx, event.TextGeneration{ID: ids.CommandID(g.cfg.NewID()), Task: task,
		Model: ids.ModelID(model), Owner: g.cfg.Node, Payload: p.ref})
	if err != nil {
		g.forget(task)
		return nil, err
	}
	// When the client goes away first, cancel the task on the cluster.
	go func() {
		<-ctx.Done()
		if !g.forget(task) {
			return // finished normally
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := g.cfg.Master.Execute(cctx, event.CancelTask{ID: ids.CommandID(g.cfg.NewID()), Task: task}); err != nil {
			g.cfg.Logger.Debug("cancel after client disconnect failed", "task", task, "err", err)
		}
	}()
	return p.out, nil
}

// forget drops a task; it reports whether the task was still pending.
func (g *Gateway) forget(task ids.TaskID) bool {
	g.mu.Lock()
	p, ok := g.tasks[task]
	delete(g.tasks, task)
	g.mu.Unlock()
	if ok {
		p.once.Do(func() { close(p.gone) })
	}
	return ok
}

func (g *Gateway) lookup(task ids.TaskID) (*pending, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p, ok := g.tasks[task]
	return p, ok
}

// Payload returns the request of a task this node owns, checked against the
// reference the master indexed.
func (g *Gateway) Payload(ctx context.Context, task ids.TaskID, owner ids.NodeID, ref event.PayloadRef) (infer.TaskPayload, error) {
	if owner != g.cfg.Node {
		return infer.TaskPayload{}, fmt.Errorf("gateway: task %s is owned by node %s, not this one; a task of another node is fetched over the data plane (RemoteTasks)", task, owner)
	}
	p, ok := g.lookup(task)
	if !ok {
		return infer.TaskPayload{}, fmt.Errorf("gateway: task %s is no longer waiting (its client left)", task)
	}
	if p.ref != ref {
		return infer.TaskPayload{}, fmt.Errorf("gateway: task %s payload does not match the indexed digest", task)
	}
	return p.payload, nil
}

// Deliver passes a chunk to the waiting client; the final chunk closes the
// stream.
func (g *Gateway) Deliver(ctx context.Context, task ids.TaskID, owner ids.NodeID, c infer.Chunk) error {
	if owner != g.cfg.Node {
		return fmt.Errorf("gateway: task %s is owned by node %s", task, owner)
	}
	p, ok := g.lookup(task)
	if !ok {
		return fmt.Errorf("gateway: task %s has no waiting client", task)
	}
	select {
	case p.out <- c:
	case <-p.gone:
		return fmt.Errorf("gateway: the client of task %s left", task)
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.Kind == infer.ChunkDone || c.Kind == infer.ChunkError {
		g.mu.Lock()
		delete(g.tasks, task)
		g.mu.Unlock()
		close(p.out)
	}
	return nil
}

// Models lists the models with a ready instance.
func (g *Gateway) Models(ctx context.Context) ([]infer.ModelInfo, error) {
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
	out := make([]infer.ModelInfo, 0, len(seen))
	for m, t := range seen {
		out = append(out, infer.ModelInfo{ID: string(m), OwnedBy: "skulk", Created: time.UnixMilli(t)})
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
}

// NodeHealth is one node's health as this node sees it.
type NodeHealth struct {
	Healthy bool     `json:"healthy"`
	Reasons []string `json:"reasons"` // e.g. unreachable, version_mismatch, telemetry_partial, telemetry_missing
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

// Place submits a placement; the planner's refusal comes back synchronously.
func (g *Gateway) Place(ctx context.Context, req admin.PlaceRequest) (admin.PlaceResult, error) {
	if req.MinNodes < 0 || req.ContextTokens < 0 {
		return admin.PlaceResult{}, infer.ParamErrorf("min_nodes", "min_nodes and context_tokens must not be negative")
	}
	id := ids.CommandID(g.cfg.NewID())
	_, err := g.cfg.Master.Execute(ctx, event.PlaceInstance{ID: id, Model: req.ModelID, MinNodes: uint32(req.MinNodes),
		ExcludedNodes: req.ExcludedNodes, ContextTokens: uint32(req.ContextTokens)})
	if err != nil {
		return admin.PlaceResult{}, err
	}
	return admin.PlaceResult{InstanceID: id.Instance()}, nil
}

// Previews lists what each placement width of a model would use.
func (g *Gateway) Previews(ctx context.Context, model ids.ModelID) (any, error) {
	card, ok := g.cfg.Catalog().Get(string(model))
	if !ok {
		return nil, infer.Errorf(infer.ClassNotFound, "unknown model %q (GET /models lists the catalog)", model)
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
	nodes = master.Charged(st, nodes, func(id ids.ModelID) (catalog.Card, bool) { return g.cfg.Catalog().Get(string(id)) }, "")
	pv, err := placement.Previews(master.PlacementModel(card), nodes)
	if err != nil {
		return nil, err
	}
	return map[string]any{"model_id": model, "previews": pv}, nil
}

// DeleteInstance tears an instance down.
func (g *Gateway) DeleteInstance(ctx context.Context, id ids.InstanceID) error {
	_, err := g.cfg.Master.Execute(ctx, event.DeleteInstance{ID: ids.CommandID(g.cfg.NewID()), Instance: id})
	return err
}

// Diagnostics returns the cluster diagnostics document.
func (g *Gateway) Diagnostics(ctx context.Context) (any, error) {
	if g.cfg.Diagnostics == nil {
		return nil, infer.Errorf(infer.ClassNotFound, "diagnostics are not available on this node")
	}
	return g.cfg.Diagnostics(ctx)
}

// SetTracing sets the cluster-wide tracing flag.
func (g *Gateway) SetTracing(ctx context.Context, enabled bool) error {
	_, err := g.cfg.Master.Execute(ctx, event.SetTracingEnabled{ID: ids.CommandID(g.cfg.NewID()), Enabled: enabled})
	return err
}
