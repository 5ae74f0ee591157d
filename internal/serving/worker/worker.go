// Package worker runs this node's share of the cluster's placements. One
// goroutine owns its view of the State and the set of runners: it applies the
// indexed events it subscribes to, and reconciles — a runner subprocess for
// every shard placed here, none for shards that are gone. Runner goroutines
// report their facts to the master directly. Tasks never pass through the
// control plane: the node that owns a request hands it to Serve here once
// it has chosen the instance, and reads the runner's chunks back.
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/supervise"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// Master is the control plane as the worker uses it.
type Master interface {
	Subscribe(ctx context.Context, after ids.Index) (<-chan event.IndexedEvent, error)
	State(ctx context.Context) (state.State, error)
	Report(ctx context.Context, source event.Source, ev event.Event) error
	Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error)
}

// Runner is one runner subprocess as the worker drives it (client.Client).
type Runner interface {
	// Load loads the shard; the ready status says what the runner serves
	// (its window, the prompt bound).
	Load(ctx context.Context, spec proto.LoadSpec) (proto.Status, error)
	Generate(ctx context.Context, task string, req request.Request) (<-chan request.Chunk, error)
	// Exited is closed when the subprocess ends; Err then says why.
	Exited() <-chan struct{}
	Err() error
	Close(ctx context.Context) error
}

// Config wires a worker.
type Config struct {
	Node   ids.NodeID
	Master Master
	// Spawn starts a runner subprocess named for logs.
	Spawn func(ctx context.Context, name string) (Runner, error)
	// Resolve makes the weights of a model's shard local and says how to
	// load them. It calls downloading when it has to fetch weights first,
	// so the runner's status can say so.
	Resolve func(ctx context.Context, model ids.ModelID, shard event.Shard, downloading func()) (Model, error)
	// Guard is the pre-spawn memory check of one shard; an error refuses the
	// placement (RefuseInstancePlacement) instead of loading.
	Guard func(inst state.Instance, rank int) (need, available int64, err error)
	// Edges, when set, is the node's edge socket for the runners of a
	// pipeline placement (several ranks): it records where the instance's
	// ranks are and returns the socket their links go through. Without it
	// a pipeline placement fails to load.
	Edges func(inst ids.InstanceID, placement []event.Shard) (socket string)
	// EdgeConnectTimeout bounds a stage's wait for its links; 0 means the
	// runner's default.
	EdgeConnectTimeout time.Duration
	Threads            int
	// Breaker gives up on a rank whose runner keeps failing.
	BreakerMax    int
	BreakerWindow time.Duration
	// RestartDelay is the pause before relaunching a failed runner.
	RestartDelay time.Duration
	Now          func() time.Time
	// NewID mints ids for runners and commands.
	NewID  func() string
	Logger *slog.Logger
}

// Model is what a runner needs to load a model.
type Model struct {
	Path         string // the GGUF file
	ChatTemplate string // overrides the GGUF's template when set
	// Speculative is the card's speculative decoding (nil: none), its
	// draft model resolved to a local file.
	Speculative *proto.SpeculativeSpec
}

// Worker reconciles runners against the State.
type Worker struct {
	cfg  Config
	msgs chan any
	// ready holds the loaded runners by shard, published by the loop for
	// Serve to read without a round trip to it.
	ready atomic.Pointer[map[key]loadedRunner]
	// runners describes every rank's runner, published by the loop for
	// Runners and Recorders (metrics, diagnostics).
	runners atomic.Pointer[[]runnerEntry]
	// serving counts the goroutines that forward tasks' chunks; Run waits
	// for them after stopping the runners (which ends their streams).
	serving sync.WaitGroup
}

// New returns a worker; call Run.
func New(cfg Config) *Worker {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.BreakerMax == 0 {
		cfg.BreakerMax = 3
	}
	if cfg.BreakerWindow == 0 {
		cfg.BreakerWindow = 5 * time.Minute
	}
	if cfg.RestartDelay == 0 {
		cfg.RestartDelay = 500 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Worker{cfg: cfg, msgs: make(chan any, 64)}
}

type key struct {
	inst ids.InstanceID
	rank int
}

// handle is one rank's runner, across restarts.
type handle struct {
	key     key
	id      ids.RunnerID
	cancel  context.CancelFunc
	done    chan struct{}
	runner  Runner       // set once loaded; read by the loop only
	status  proto.Status // the runner's ready status
	breaker *supervise.Breaker
	gaveUp  bool
	// restarts counts relaunches after a failure; pid is the current
	// incarnation's process (0 before it is spawned and after it exits).
	restarts int
	pid      int
	rec      *recorder // the rank's flight recorder, shared with its runner goroutines and tasks
}

// runnerEntry is a rank's published description and its recorder.
type runnerEntry struct {
	info RunnerInfo
	rec  *recorder
}

// RunnerInfo describes one rank's runner on this node, across restarts.
type RunnerInfo struct {
	Instance ids.InstanceID
	Model    ids.ModelID
	Rank     int
	Runner   ids.RunnerID // the current incarnation
	Restarts int          // relaunches after a failure
	Pid      int          // the runner process, 0 while none runs (or the Runner cannot say)
	Ready    bool         // loaded and serving
}

// Runners describes this node's runners, one per instance rank placed here,
// sorted by instance and rank.
func (w *Worker) Runners() []RunnerInfo {
	var out []RunnerInfo
	if p := w.runners.Load(); p != nil {
		for _, e := range *p {
			out = append(out, e.info)
		}
	}
	return out
}

// RunnerRecord is a rank's runner with its flight recorder: the latest
// RecorderSize phases of its runners, oldest first.
type RunnerRecord struct {
	RunnerInfo
	Phases []Phase
}

// Recorders returns every rank's runner with its flight recorder, sorted
// by instance and rank.
func (w *Worker) Recorders() []RunnerRecord {
	var out []RunnerRecord
	if p := w.runners.Load(); p != nil {
		for _, e := range *p {
			out = append(out, RunnerRecord{RunnerInfo: e.info, Phases: e.rec.phases()})
		}
	}
	return out
}

// Messages from handle and task goroutines to the loop.
type (
	runnerReady struct {
		key    key
		id     ids.RunnerID
		r      Runner
		status proto.Status
		noted  chan struct{} // closed once Serve can find the runner
	}
	runnerExited struct {
		key    key
		id     ids.RunnerID
		reason string
		failed bool
	}
	restartDue    struct{ key key }
	runnerSpawned struct {
		key key
		id  ids.RunnerID
		pid int
	}
)

func (w *Worker) source() event.Source { return event.Source{Role: event.RoleWorker, Node: w.cfg.Node} }

// Run owns the worker's state until ctx ends, then stops every runner.
func (w *Worker) Run(ctx context.Context) error {
	l := &loop{w: w, handles: map[key]*handle{}}
	defer w.serving.Wait()
	defer l.shutdown()
	for {
		// The control plane may be between roles (an election, a resync):
		// wait and retry rather than stop.
		st, err := w.cfg.Master.State(ctx)
		if err == nil {
			var sub <-chan event.IndexedEvent
			if sub, err = w.cfg.Master.Subscribe(ctx, st.LastIndex); err == nil {
				// A new subscription starts from a State that may replace
				// ours entirely (a snapshot after a resync).
				l.view = st
				l.reconcile(ctx)
				if done := l.follow(ctx, sub); done {
					return nil
				}
				continue
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		w.cfg.Logger.Debug("control plane not ready; retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

type loop struct {
	w       *Worker
	view    state.State
	settled bool // the previous process's runners were reported stopped
	handles map[key]*handle
	wg      sync.WaitGroup
}

// follow keeps the view current until the subscription ends (resubscribe)
// or ctx ends (done). The events only say that the State moved: the view is
// the replica's own State, read once per burst of events, not a second copy
// built by applying every event again.
func (l *loop) follow(ctx context.Context, sub <-chan event.IndexedEvent) (done bool) {
	for {
		select {
		case <-ctx.Done():
			return true
		case ie, ok := <-sub:
			if !ok {
				return false
			}
			last := ie.Index
		drain:
			for {
				select {
				case ie, ok := <-sub:
					if !ok {
						return false
					}
					last = ie.Index
				default:
					break drain
				}
			}
			if last <= l.view.LastIndex {
				continue
			}
			st, err := l.w.cfg.Master.State(ctx)
			if err != nil || st.LastIndex < last {
				// A role switch under way: resubscribe from a fresh State.
				l.w.cfg.Logger.Debug("worker view behind its subscription; resyncing", "index", last, "err", err)
				return false
			}
			l.view = st
			l.reconcile(ctx)
		case m := <-l.w.msgs:
			l.onMessage(ctx, m)
		}
		l.publish()
	}
}

// publish makes the loaded runners visible to Serve.
func (l *loop) publish() {
	m := make(map[key]loadedRunner, len(l.handles))
	for k, h := range l.handles {
		if h.runner != nil && !h.gaveUp {
			m[k] = loadedRunner{Runner: h.runner, status: h.status, id: h.id, rec: h.rec}
		}
	}
	if old := l.w.ready.Load(); old == nil || !maps.Equal(*old, m) {
		l.w.ready.Store(&m)
	}
	infos := make([]runnerEntry, 0, len(l.handles))
	for k, h := range l.handles {
		infos = append(infos, runnerEntry{info: RunnerInfo{Instance: k.inst, Model: l.view.Instances[k.inst].Model, Rank: k.rank, Runner: h.id,
			Restarts: h.restarts, Pid: h.pid, Ready: h.runner != nil && !h.gaveUp}, rec: h.rec})
	}
	slices.SortFunc(infos, func(a, b runnerEntry) int {
		return cmp.Or(cmp.Compare(a.info.Instance, b.info.Instance), cmp.Compare(a.info.Rank, b.info.Rank))
	})
	if old := l.w.runners.Load(); old == nil || !slices.Equal(*old, infos) {
		l.w.runners.Store(&infos)
	}
}

// loadedRunner is a runner Serve may use, with its ready status, its id
// and its rank's flight recorder.
type loadedRunner struct {
	Runner
	status proto.Status
	id     ids.RunnerID
	rec    *recorder
}

// runner returns the loaded runner of a shard on this node (Runner nil when
// none).
func (w *Worker) runner(k key) loadedRunner {
	if m := w.ready.Load(); m != nil {
		return (*m)[k]
	}
	return loadedRunner{}
}

func (l *loop) onMessage(ctx context.Context, m any) {
	switch m := m.(type) {
	case runnerReady:
		if h, ok := l.handles[m.key]; ok && h.id == m.id {
			h.runner, h.status = m.r, m.status
			l.publish()
		}
		close(m.noted)
	case runnerSpawned:
		if h, ok := l.handles[m.key]; ok && h.id == m.id {
			h.pid = m.pid
		}
	case runnerExited:
		h, ok := l.handles[m.key]
		if !ok || h.id != m.id {
			return
		}
		h.runner, h.pid = nil, 0
		if !m.failed {
			return
		}
		if h.breaker.Record(l.w.cfg.Now()) {
			h.gaveUp = true
			l.w.cfg.Logger.Warn("runner keeps failing; giving up on the instance", "instance", m.key.inst, "rank", m.key.rank, "reason", m.reason)
			cmd := event.FailInstance{ID: ids.CommandID(l.w.cfg.NewID()), Instance: m.key.inst, Node: l.w.cfg.Node,
				Category: event.FailureCrashLoop, Detail: truncate(fmt.Sprintf("runner failed %d times within %s; last: %s", l.w.cfg.BreakerMax, l.w.cfg.BreakerWindow, m.reason))}
			// Off the loop (the master may be remote), but owned: shutdown waits for it.
			l.wg.Add(1)
			go func() { defer l.wg.Done(); l.w.execute(ctx, cmd) }()
			return
		}
		k := m.key
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			select {
			case <-time.After(l.w.cfg.RestartDelay):
				l.w.post(ctx, restartDue{k})
			case <-ctx.Done():
			}
		}()
	case restartDue:
		h, ok := l.handles[m.key]
		if !ok || h.gaveUp || !l.placed(m.key) {
			return
		}
		h.restarts++
		l.launch(ctx, h)
	}
}

func (w *Worker) post(ctx context.Context, m any) {
	select {
	case w.msgs <- m:
	case <-ctx.Done():
	}
}

func (w *Worker) execute(ctx context.Context, cmd event.Command) {
	if _, err := w.cfg.Master.Execute(ctx, cmd); err != nil && ctx.Err() == nil {
		w.cfg.Logger.Warn("command to the master failed", "kind", cmd.Kind(), "err", err)
	}
}

func (w *Worker) report(ctx context.Context, ev event.Event) {
	if err := w.cfg.Master.Report(ctx, w.source(), ev); err != nil && ctx.Err() == nil {
		// The State may have moved on (the instance was deleted); that is
		// not an error worth more than a debug line.
		w.cfg.Logger.Debug("report not admitted", "kind", ev.Kind(), "err", err)
	}
}

// placed reports whether the State still places k on this node.
func (l *loop) placed(k key) bool {
	inst, ok := l.view.Instances[k.inst]
	return ok && inst.Status != state.InstanceFailed && k.rank < len(inst.Placement) && inst.Placement[k.rank].Node == l.w.cfg.Node
}

// reconcile starts a runner for every shard placed here and stops the rest.
func (l *loop) reconcile(ctx context.Context) {
	if !l.settled {
		l.settled = true
		l.settle(ctx)
	}
	for _, sh := range l.view.ShardsOnNode(l.w.cfg.Node) {
		k := key{sh.Instance, sh.Rank}
		if !l.placed(k) {
			continue
		}
		if _, ok := l.handles[k]; !ok {
			h := &handle{key: k, breaker: &supervise.Breaker{Max: l.w.cfg.BreakerMax, Window: l.w.cfg.BreakerWindow}, rec: newRecorder(l.w.cfg.Now)}
			l.handles[k] = h
			l.launch(ctx, h)
		}
	}
	for k, h := range l.handles {
		if !l.placed(k) {
			l.stop(h)
			delete(l.handles, k)
		}
	}
}

func (l *loop) stop(h *handle) {
	if h.cancel != nil {
		h.cancel()
	}
}

func (l *loop) shutdown() {
	l.w.ready.Store(&map[key]loadedRunner{})
	for _, h := range l.handles {
		l.stop(h)
	}
	l.wg.Wait()
}

// launch starts a new runner incarnation for h.
func (l *loop) launch(ctx context.Context, h *handle) {
	if h.cancel != nil {
		h.cancel()
	}
	rctx, cancel := context.WithCancel(ctx)
	h.cancel = cancel
	h.id = ids.RunnerID(l.w.cfg.NewID())
	h.runner, h.pid = nil, 0
	inst := l.view.Instances[h.key.inst]
	l.wg.Add(1)
	go func(id ids.RunnerID, rec *recorder) {
		defer l.wg.Done()
		l.w.runRunner(rctx, h.key, id, inst, rec)
	}(h.id, h.rec)
}

func truncate(s string) string {
	if len(s) > event.MaxReasonBytes {
		return s[:event.MaxReasonBytes]
	}
	return s
}

var errNoRunner = errors.New("no ready runner for the instance on this node")

// settle reports, once after the process starts, that the runners the State
// records on this node belong to a previous process and are gone, so no task
// is routed to them while their replacements load.
func (l *loop) settle(ctx context.Context) {
	for _, ev := range l.view.RunnersRestarted(l.w.cfg.Node) {
		l.w.report(ctx, ev)
	}
}
