package worker_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/control/plane"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
	"github.com/skulk/skulk/internal/serving/worker"
	"github.com/skulk/skulk/internal/testkit"
)

// The worker runs against a real master on a real event log; its other
// collaborators (runner subprocesses, the owner side of tasks, the weights)
// are fakes, and the link between worker and master is a fake the test can
// cut, as an election or a resync does.

const (
	self      = ids.NodeID("node-a")
	elsewhere = ids.NodeID("node-b")
	wait      = 10 * time.Second // for things that take milliseconds
)

// harness is one node: a master, a worker on the same node, and the fakes.
type harness struct {
	t       *testing.T
	dir     string
	clk     *testkit.Clock
	m       controlPlane
	link    *fakeLink
	runners chan *fakeRunner // every runner the default spawn made, in order
	// spawns receives each spawn attempt when the test answers them
	// itself (scriptedSpawn).
	spawns     chan spawnCall
	scripted   bool
	nextID     atomic.Int64
	stopMaster func()
	logs       syncBuffer // the worker's log
	// masterOn is the node whose process runs the master; "" is self.
	masterOn ids.NodeID
}

// syncBuffer is a log sink safe for the worker's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), clk: testkit.NewClock(time.UnixMilli(1_700_000_000_000)),
		runners: make(chan *fakeRunner, 64), spawns: make(chan spawnCall, 64)}
	h.link = &fakeLink{}
	h.startMaster()
	return h
}

// startMaster runs a master (again) on the harness's log, as a process
// start does.
func (h *harness) startMaster() {
	t := h.t
	t.Helper()
	log, err := eventlog.Open(h.dir, eventlog.Options{FreeSpaceFloor: eventlog.NoFloor, Sync: eventlog.SyncManual})
	if err != nil {
		t.Fatal(err)
	}
	card, err := catalog.BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	on := cmp.Or(h.masterOn, self)
	p, err := plane.New(plane.Config{Node: on, Log: log, Found: true, StartedAt: time.Now(),
		Card: func(id ids.ModelID) (catalog.Card, bool) { return card, string(id) == card.ID }})
	if err != nil {
		t.Fatal(err)
	}
	h.m = p
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	var once sync.Once
	h.stopMaster = func() { once.Do(func() { cancel(); <-done; log.Close() }) }
	t.Cleanup(h.stopMaster)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, _ := p.State(ctx); p.IsMaster() && st.Master == on {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the control plane did not elect itself")
		}
	}
	h.link.set(h.m)
}

// startWorker runs a worker; the returned func stops it and waits until
// Run returned, every runner and task goroutine with it.
func (h *harness) startWorker() (stop func()) {
	_, stop = h.startWorkerW()
	return stop
}

func (h *harness) startWorkerW() (w *worker.Worker, stop func()) {
	h.t.Helper()
	w = worker.New(worker.Config{
		Node: self, Master: h.link, Spawn: h.spawn,
		Resolve: func(ctx context.Context, model ids.ModelID, _ event.Shard, downloading func()) (worker.Model, error) {
			return worker.Model{Path: "/models/" + string(model) + ".gguf"}, nil
		},
		// The breaker keeps its defaults (3 failures within 5 minutes).
		RestartDelay: time.Millisecond,
		Now:          h.clk.Now,
		NewID:        func() string { return fmt.Sprintf("id-%d", h.nextID.Add(1)) },
		Logger:       slog.New(slog.NewTextHandler(&h.logs, nil)),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	h.t.Cleanup(stop)
	return w, stop
}

func (h *harness) spawn(ctx context.Context, name string) (worker.Runner, error) {
	if !h.scripted {
		r := newFakeRunner(name)
		h.runners <- r
		return r, nil
	}
	call := spawnCall{name: name, reply: make(chan spawnResult, 1)}
	h.spawns <- call
	select {
	case res := <-call.reply:
		if res.err != nil {
			return nil, res.err
		}
		return res.r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type spawnCall struct {
	name  string
	reply chan spawnResult
}

type spawnResult struct {
	r   *fakeRunner
	err error
}

// place creates an instance of the demo model with its one rank on node.
func (h *harness) place(id ids.InstanceID, node ids.NodeID) {
	h.t.Helper()
	_, err := h.m.Execute(context.Background(), event.CreateInstance{ID: ids.CommandID(id), Model: catalog.BuiltinID, Backend: "native-cpu",
		Placement: []event.Shard{{Node: node, LayerStart: 0, LayerEnd: 5, HoldsEmbedding: true, HoldsHead: true}}, Layers: 5, ContextTokens: 512})
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) state() state.State {
	h.t.Helper()
	st, err := h.m.State(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

func (h *harness) instanceIs(id ids.InstanceID, status state.InstanceStatus) func() bool {
	return func() bool { inst, ok := h.state().Instances[id]; return ok && inst.Status == status }
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out after %v waiting for %s", wait, what)
		panic("unreachable")
	}
}

// TestReconcileSpawnsAndStops: a shard placed on this node gets a runner
// loaded with its slice of the model; a shard placed elsewhere does not; a
// deleted instance's runner is stopped.
func TestReconcileSpawnsAndStops(t *testing.T) {
	testkit.NoLeaks(t)
	h := newHarness(t)
	if err := h.m.Report(context.Background(), event.Source{Role: event.RoleMaster, Node: self}, event.NodeJoined{Node: elsewhere, AtUnixMs: 1}); err != nil {
		t.Fatal(err)
	}
	stop := h.startWorker()
	h.place("there", elsewhere)
	h.place("here", self)
	r := recv(t, h.runners, "a runner for the shard placed here")
	testkit.Eventually(t, wait, "the instance to be ready", h.instanceIs("here", state.InstanceReady))
	want := proto.LoadSpec{ModelPath: "/models/" + catalog.BuiltinID + ".gguf", Start: 0, End: 5, First: true, Last: true, ContextTokens: 512, Instance: "here", Rank: 0}
	if got := r.loaded(); got != want {
		t.Fatalf("loaded %+v\nwant %+v", got, want)
	}

	if _, err := h.m.Execute(context.Background(), event.DeleteInstance{ID: "del", Instance: "here"}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, wait, "the deleted instance's runner to close", r.isClosed)
	stop() // every runner goroutine has returned: no spawn is still to come
	if n := len(h.runners); n != 0 {
		t.Fatalf("%d more runners were spawned; the other instance is placed on another node", n)
	}
	if !strings.Contains(r.name, "here") {
		t.Fatalf("the runner is named %q", r.name)
	}
}

// TestSettleReportsThePreviousRunnersStopped: after a restart, the runners
// the State records on this node belonged to the previous process; the
// worker says so before its replacement loads, so no task is routed to them.
func TestSettleReportsThePreviousRunnersStopped(t *testing.T) {
	testkit.NoLeaks(t)
	h := newHarness(t)
	h.place("inst", self)
	src := event.Source{Role: event.RoleWorker, Node: self}
	for _, s := range []event.RunnerStatus{event.RunnerLoading, event.RunnerReady} {
		if err := h.m.Report(context.Background(), src, event.RunnerStatusUpdated{Runner: "old", Instance: "inst", Node: self, Status: s}); err != nil {
			t.Fatal(err)
		}
	}
	// The node's worker restarts while the master's process does not: the
	// State still says "old" is ready, and only this node's worker knows it
	// is gone. (A restarted master stops its own node's runners itself:
	// master.TestPlaceServeDeleteAndRestart.)
	sub, err := h.m.Subscribe(context.Background(), h.state().LastIndex)
	if err != nil {
		t.Fatal(err)
	}
	h.startWorker()
	var got []string
	for {
		ie := recv(t, sub, "the replacement runner to be ready")
		ru, ok := ie.Event.(event.RunnerStatusUpdated)
		if !ok {
			continue
		}
		got = append(got, fmt.Sprintf("%s %s", ru.Runner, ru.Status))
		if ru.Runner != "old" && ru.Status == event.RunnerReady {
			break
		}
	}
	if got[0] != "old stopped" {
		t.Fatalf("runner reports %q, want the old runner stopped first", got)
	}
}

// TestCrashBreaker: a rank whose runner keeps failing is restarted until
// three failures fall within five minutes; then the worker fails the
// instance instead. Failures spread wider are restarted for ever.
func TestCrashBreaker(t *testing.T) {
	tests := []struct {
		name     string
		gap      time.Duration // between failures, on the worker's clock
		giveUp   bool
		attempts int // spawn attempts that fail
	}{
		{"three_failures_within_five_minutes_fail_the_instance", 2 * time.Minute, true, 3},
		{"failures_spread_wider_are_restarted", 3 * time.Minute, false, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testkit.NoLeaks(t)
			h := newHarness(t)
			h.scripted = true
			w, _ := h.startWorkerW()
			h.place("inst", self)
			for i := range tt.attempts {
				call := recv(t, h.spawns, fmt.Sprintf("spawn attempt %d", i+1))
				if i > 0 {
					h.clk.Advance(tt.gap)
				}
				call.reply <- spawnResult{err: errors.New("exec: skulk-runner: not found")}
			}
			if tt.giveUp {
				testkit.Eventually(t, wait, "the instance to fail", h.instanceIs("inst", state.InstanceFailed))
				st := h.state()
				f := st.Failures[len(st.Failures)-1]
				if f.Instance != "inst" || f.Category != event.FailureCrashLoop || !strings.Contains(f.Detail, "failed 3 times within 5m0s") {
					t.Fatalf("failure %+v, want a crash loop of 3 failures within 5 minutes", f)
				}
				return
			}
			// Still restarting: the next attempt comes, and it loads.
			call := recv(t, h.spawns, "one more spawn attempt")
			call.reply <- spawnResult{r: newFakeRunner(call.name)}
			testkit.Eventually(t, wait, "the instance to be ready", h.instanceIs("inst", state.InstanceReady))
			if n := len(h.state().Failures); n != 0 {
				t.Fatalf("%d failures recorded", n)
			}
			// The rank's runner is described across its restarts: each
			// failed attempt was relaunched, and the loaded one's process
			// is known.
			testkit.Eventually(t, wait, "the runner to be described", func() bool {
				rs := w.Runners()
				return len(rs) == 1 && rs[0].Ready
			})
			want := worker.RunnerInfo{Instance: "inst", Model: catalog.BuiltinID, Rank: 0, Restarts: tt.attempts, Pid: fakePid, Ready: true}
			if got := w.Runners()[0]; got.Runner == "" || got.Instance != want.Instance || got.Model != want.Model ||
				got.Restarts != want.Restarts || got.Pid != want.Pid || !got.Ready {
				t.Fatalf("runner %+v, want %+v", got, want)
			}
		})
	}
}

// TestServe: a task handed to the worker runs on the loaded runner of the
// instance's first rank and its stream ends with the runner's final chunk;
// cancelling the caller's context cancels it on the runner; a runner that
// stops mid-answer ends the stream with an error chunk; an instance with no
// loaded runner here is refused as unavailable.
func TestServe(t *testing.T) {
	testkit.NoLeaks(t)
	h := newHarness(t)
	w, stop := h.startWorkerW()
	req := request.TaskPayload{Generate: &request.Request{Model: catalog.BuiltinID, Prompt: "once upon a time"}}
	if _, err := w.Serve(t.Context(), "inst", "t0", req); fault.ClassOf(err) != fault.ClassUnavailable {
		t.Fatalf("Serve before the runner loaded: %v", err)
	}
	h.place("inst", self)
	r := recv(t, h.runners, "the runner")
	testkit.Eventually(t, wait, "the instance to be ready", h.instanceIs("inst", state.InstanceReady))

	// Ready in the State means Serve finds the runner: no retry window.
	chunks, err := w.Serve(t.Context(), "inst", "t1", req)
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(chunks); len(got) != 1 || got[0].Kind != request.ChunkDone || r.generations("t1") != 1 {
		t.Fatalf("t1: %+v, %d generations", got, r.generations("t1"))
	}

	ctx, cancel := context.WithCancel(t.Context())
	r.hold("t2")
	chunks, err = w.Serve(ctx, "inst", "t2", req)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, wait, "t2 to reach the runner", func() bool { return r.generations("t2") == 1 })
	cancel()
	drain(chunks)
	testkit.Eventually(t, wait, "the runner to see t2 cancelled", func() bool { return r.cancelled("t2") })

	r.hold("t3")
	chunks, err = w.Serve(t.Context(), "inst", "t3", req)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, wait, "t3 to reach the runner", func() bool { return r.generations("t3") == 1 })
	if _, err := h.m.Execute(t.Context(), event.DeleteInstance{ID: "del", Instance: "inst"}); err != nil {
		t.Fatal(err)
	}
	got := drain(chunks)
	if len(got) != 1 || got[0].Kind != request.ChunkError || got[0].Error.Class != fault.ClassUnavailable {
		t.Fatalf("a task whose runner stopped mid-answer ended with %+v", got)
	}
	stop()
}

// TestFlightRecorder: a rank's flight recorder keeps its runners' phases
// (spawn, load, ready, tasks, the crash) across a restart, and a runner
// that crashes leaves the recorder in the node's log.
func TestFlightRecorder(t *testing.T) {
	testkit.NoLeaks(t)
	h := newHarness(t)
	w, stop := h.startWorkerW()
	h.place("inst", self)
	r := recv(t, h.runners, "the runner")
	testkit.Eventually(t, wait, "the instance to be ready", h.instanceIs("inst", state.InstanceReady))
	req := request.TaskPayload{Generate: &request.Request{Model: catalog.BuiltinID, Prompt: "once upon a time"}}
	chunks, err := w.Serve(t.Context(), "inst", "t1", req)
	if err != nil {
		t.Fatal(err)
	}
	drain(chunks)
	r.crash()
	recv(t, h.runners, "the restarted runner")
	testkit.Eventually(t, wait, "the restarted runner to be ready", func() bool {
		rs := w.Recorders()
		return len(rs) == 1 && rs[0].Ready && rs[0].Restarts == 1 && rs[0].Phases[len(rs[0].Phases)-1].Phase == worker.PhaseReady
	})
	rec := w.Recorders()[0]
	var phases []string
	for _, p := range rec.Phases {
		phases = append(phases, p.Phase)
		if p.Runner == "" || p.At.IsZero() {
			t.Errorf("phase %+v has no runner or time", p)
		}
	}
	want := []string{worker.PhaseSpawn, worker.PhaseLoad, worker.PhaseReady, worker.PhaseTaskStart, worker.PhaseTaskEnd, worker.PhaseExit,
		worker.PhaseSpawn, worker.PhaseLoad, worker.PhaseReady}
	if strings.Join(phases, " ") != strings.Join(want, " ") {
		t.Fatalf("phases %q, want %q", phases, want)
	}
	if first, last := rec.Phases[0].Runner, rec.Phases[len(rec.Phases)-1].Runner; first == last || last != rec.Runner {
		t.Errorf("the phases name runners %s then %s; want two incarnations, the last %s", first, last, rec.Runner)
	}
	if d := rec.Phases[4].Detail; d != "task t1 completed" {
		t.Errorf("task end detail %q", d)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "flight_recorder=") || !strings.Contains(logs, "task_start task t1") {
		t.Errorf("the crash did not log the flight recorder:\n%s", logs)
	}
	stop()
}

func drain(ch <-chan request.Chunk) []request.Chunk {
	var out []request.Chunk
	for c := range ch {
		out = append(out, c)
	}
	return out
}

// controlPlane is the real control plane as the tests drive it.
type controlPlane interface {
	Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error)
	Report(ctx context.Context, src event.Source, ev event.Event) error
	State(ctx context.Context) (state.State, error)
	Subscribe(ctx context.Context, after ids.Index) (<-chan event.IndexedEvent, error)
}

// fakeLink is the worker's path to the master: the real master, behind a
// link the test can cut (subscriptions end, calls for the State fail, as
// while the node has no master) and restore.
type fakeLink struct {
	mu   sync.Mutex
	m    controlPlane
	down bool
	cuts []chan struct{} // one per live subscription: closed by cut
}

var errNoMaster = errors.New("fake link: no master (the link is cut)")

func (l *fakeLink) set(m controlPlane) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m = m
}

func (l *fakeLink) cur() (controlPlane, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return nil, errNoMaster
	}
	return l.m, nil
}

func (l *fakeLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for _, c := range l.cuts {
		close(c)
	}
	l.cuts = nil
}

func (l *fakeLink) restore() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = false
}

func (l *fakeLink) State(ctx context.Context) (state.State, error) {
	m, err := l.cur()
	if err != nil {
		return state.State{}, err
	}
	return m.State(ctx)
}

// Subscribe forwards the master's subscription until the link is cut.
func (l *fakeLink) Subscribe(ctx context.Context, after ids.Index) (<-chan event.IndexedEvent, error) {
	m, err := l.cur()
	if err != nil {
		return nil, err
	}
	in, err := m.Subscribe(ctx, after)
	if err != nil {
		return nil, err
	}
	cut := make(chan struct{})
	l.mu.Lock()
	l.cuts = append(l.cuts, cut)
	l.mu.Unlock()
	out := make(chan event.IndexedEvent)
	go func() {
		defer close(out)
		for {
			select {
			case ie, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- ie:
				case <-cut:
					return
				case <-ctx.Done():
					return
				}
			case <-cut:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Report and Execute pass through: the master is reachable for them in
// every test here.
func (l *fakeLink) Report(ctx context.Context, src event.Source, ev event.Event) error {
	l.mu.Lock()
	m := l.m
	l.mu.Unlock()
	return m.Report(ctx, src, ev)
}

func (l *fakeLink) Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error) {
	l.mu.Lock()
	m := l.m
	l.mu.Unlock()
	return m.Execute(ctx, cmd)
}

// fakeRunner is a runner subprocess that loads at once and answers every
// task with one final chunk, except the tasks the test holds.
type fakeRunner struct {
	name   string
	exited chan struct{}

	mu       sync.Mutex
	spec     proto.LoadSpec
	closed   bool
	gens     map[string]int
	held     map[string]chan struct{}
	cancels  map[string]bool
	stopOnce sync.Once
}

func newFakeRunner(name string) *fakeRunner {
	return &fakeRunner{name: name, exited: make(chan struct{}), gens: map[string]int{}, held: map[string]chan struct{}{}, cancels: map[string]bool{}}
}

func (r *fakeRunner) Load(ctx context.Context, spec proto.LoadSpec) (proto.Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spec = spec
	return proto.Status{State: proto.StateReady}, nil
}

func (r *fakeRunner) Generate(ctx context.Context, task string, req request.Request) (<-chan request.Chunk, error) {
	r.mu.Lock()
	r.gens[task]++
	hold := r.held[task]
	r.mu.Unlock()
	out := make(chan request.Chunk, 1)
	go func() {
		defer close(out)
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
				r.mu.Lock()
				r.cancels[task] = true
				r.mu.Unlock()
				return // as client.Client: the stream ends, the runner is told to cancel
			case <-r.exited:
				return // the process is gone: the stream ends without a final chunk
			}
		}
		out <- request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop}
	}()
	return out, nil
}

func (r *fakeRunner) Exited() <-chan struct{} { return r.exited }
func (r *fakeRunner) Err() error              { return nil }

// fakePid is every fake runner's process id.
const fakePid = 4242

func (r *fakeRunner) Pid() int { return fakePid }

func (r *fakeRunner) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.stopOnce.Do(func() { close(r.exited) })
	return nil
}

// crash ends the fake process on its own, as a crashed runner does.
func (r *fakeRunner) crash() { r.stopOnce.Do(func() { close(r.exited) }) }

// hold makes Generate of task wait until the returned channel is closed.
func (r *fakeRunner) hold(task ids.TaskID) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan struct{})
	r.held[string(task)] = ch
	return ch
}

func (r *fakeRunner) generations(task ids.TaskID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gens[string(task)]
}

func (r *fakeRunner) loaded() proto.LoadSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spec
}

func (r *fakeRunner) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *fakeRunner) cancelled(task ids.TaskID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancels[string(task)]
}
