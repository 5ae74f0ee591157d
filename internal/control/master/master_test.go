package master

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/testkit"
)

const node = ids.NodeID("node-a")

type harness struct {
	dir    string
	log    *eventlog.Log
	c      *committer
	m      *Master
	cancel context.CancelFunc
	done   chan error
}

// committer is the tests' replicated log of one voter: it appends each
// proposed batch to a real event log and applies it at once, as a
// single-voter Raft group commits (internal/control/plane runs the real
// one; these tests are about what the master decides).
type committer struct {
	mu  sync.Mutex
	log *eventlog.Log
	st  state.State
}

func (c *committer) propose(_ context.Context, evs []event.Event) ([]event.IndexedEvent, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.st
	var out []event.IndexedEvent
	for _, ev := range evs {
		ie := event.IndexedEvent{Term: next.Term, Index: next.LastIndex + 1, Event: ev}
		if me, ok := ev.(event.MasterElected); ok {
			ie.Term = me.Term
		}
		s, err := state.Apply(next, ie)
		if err != nil {
			return nil, fault.Errorf(fault.ClassConflict, "%v", err)
		}
		next, out = s, append(out, ie)
	}
	for _, ie := range out {
		b, err := event.EncodeIndexed(ie)
		if err != nil {
			return nil, err
		}
		if err := c.log.Append(uint64(ie.Index), b); err != nil {
			return nil, err
		}
	}
	c.st = next
	return out, nil
}

func (c *committer) applied() state.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// start runs a master on dir with one roomy node; opts adjust its Config.
func start(t *testing.T, dir string, opts ...func(*Config)) *harness {
	t.Helper()
	log, err := eventlog.Open(dir, eventlog.Options{FreeSpaceFloor: eventlog.NoFloor})
	if err != nil {
		t.Fatal(err)
	}
	st, err := recoverLog(log)
	if err != nil {
		t.Fatal(err)
	}
	card, err := catalog.BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	c := &committer{log: log, st: st}
	cfg := Config{
		Node: node, Propose: c.propose, Applied: c.applied, Term: st.Term + 1, Restarted: true, Now: func() time.Time { return time.UnixMilli(1_700_000_000_000) },
		Card: func(id ids.ModelID) (catalog.Card, bool) { return card, string(id) == card.ID },
		Nodes: func() []placement.Node {
			return []placement.Node{{ID: string(node), TotalBytes: 16 << 30, AvailableBytes: 8 << 30, Backends: []string{"native-cpu"}}}
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	m := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{dir: dir, log: log, c: c, m: m, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- m.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

// recoverLog replays the test's log as a node replays its own.
func recoverLog(l *eventlog.Log) (state.State, error) {
	idx, blob, err := l.LoadSnapshot()
	if errors.Is(err, eventlog.ErrNoSnapshot) {
		return state.Recover(0, nil, l.Records)
	}
	if err != nil {
		return state.State{}, err
	}
	return state.Recover(idx, blob, l.Records)
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	<-h.done
	h.log.Close()
	h.cancel = nil
}

func mustState(t *testing.T, m *Master) state.State {
	t.Helper()
	s, err := m.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPlaceServeDeleteAndRestart(t *testing.T) {
	testkit.NoLeaks(t)
	ctx := context.Background()
	dir := t.TempDir()
	h := start(t, dir)
	evs, err := h.m.Execute(ctx, event.PlaceInstance{ID: "place-1", Model: catalog.BuiltinID})
	if err != nil {
		t.Fatal(err)
	}
	ic, ok := evs[0].Event.(event.InstanceCreated)
	if !ok || ic.Instance != "place-1" || len(ic.Placement) != 1 || ic.Placement[0].Node != node || ic.ContextTokens == 0 {
		t.Fatalf("placement %+v", evs)
	}
	// The runner reports ready; the instance serves.
	src := event.Source{Role: event.RoleWorker, Node: node}
	for _, st := range []event.RunnerStatus{event.RunnerLoading, event.RunnerReady} {
		if err := h.m.Report(ctx, src, event.RunnerStatusUpdated{Runner: "runner-1", Instance: "place-1", Rank: 0, Node: node, Status: st}); err != nil {
			t.Fatal(err)
		}
	}
	// A worker may not report about another node.
	err = h.m.Report(ctx, event.Source{Role: event.RoleWorker, Node: "node-b"}, event.RunnerStatusUpdated{Runner: "runner-1", Instance: "place-1", Rank: 0, Node: node, Status: event.RunnerFailed})
	if fault.ClassOf(err) != fault.ClassInvalid {
		t.Fatalf("foreign report admitted: %v", err)
	}
	before := mustState(t, h.m)

	// Restart: the replayed State is byte-identical; the previous
	// process's runner is stopped in the same commit as the new term, so no
	// reader sees it ready.
	h.stop()
	log, _ := eventlog.Open(dir, eventlog.Options{FreeSpaceFloor: eventlog.NoFloor})
	replayed, err := recoverLog(log)
	log.Close()
	if err != nil {
		t.Fatal(err)
	}
	if state.Hash(replayed) != state.Hash(before) {
		t.Fatal("replay after restart differs from the State before it")
	}
	h = start(t, dir)
	after := mustState(t, h.m)
	inst, ok := after.Instances["place-1"]
	if !ok {
		t.Fatal("the placement was lost on restart")
	}
	if r := inst.Runners[0]; r.ID != "runner-1" || r.Status != event.RunnerStopped {
		t.Fatalf("the previous process's runner after the restart: %+v", r)
	}
	if _, err := h.m.Execute(ctx, event.DeleteInstance{ID: "del-1", Instance: "place-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Execute(ctx, event.DeleteInstance{ID: "del-2", Instance: "place-1"}); fault.ClassOf(err) != fault.ClassNotFound {
		t.Fatalf("second delete: %v", err)
	}
}

func TestUnknownModelAndShortfall(t *testing.T) {
	testkit.NoLeaks(t)
	ctx := context.Background()
	h := start(t, t.TempDir())
	if _, err := h.m.Execute(ctx, event.PlaceInstance{ID: "p-1", Model: "no-such-model"}); fault.ClassOf(err) != fault.ClassNotFound {
		t.Fatalf("unknown model: %v", err)
	}
	// Ask for more context than the card has: the planner's typed refusal.
	_, err := h.m.Execute(ctx, event.PlaceInstance{ID: "p-2", Model: catalog.BuiltinID, ContextTokens: 1 << 20})
	var inv *placement.InvalidRequestError
	if !errors.As(err, &inv) || placement.Status(err) != 400 {
		t.Fatalf("oversized context: %v", err)
	}
	if s := mustState(t, h.m); len(s.Instances) != 0 {
		t.Fatal("a refused placement changed the State")
	}
}

func TestRefusalGivesUpOnOneNode(t *testing.T) {
	testkit.NoLeaks(t)
	ctx := context.Background()
	h := start(t, t.TempDir())
	if _, err := h.m.Execute(ctx, event.PlaceInstance{ID: "p-1", Model: catalog.BuiltinID}); err != nil {
		t.Fatal(err)
	}
	_, err := h.m.Execute(ctx, event.RefuseInstancePlacement{ID: "r-1", Instance: "p-1", Node: node, Reason: "memory", NeededBytes: 100, AvailableBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	s := mustState(t, h.m)
	if s.Instances["p-1"].Status != state.InstanceFailed {
		t.Fatalf("instance %+v", s.Instances["p-1"])
	}
}

// TestGroupConnectReplaces: a split instance whose edge does not connect
// within the deadline is failed with the edge named in the failure
// history, deleted, and placed again without the node its sending rank
// could not reach; a ready split instance is left alone.
func TestGroupConnectReplaces(t *testing.T) {
	testkit.NoLeaks(t)
	ctx := context.Background()
	nodes := []ids.NodeID{node, "node-b", "node-c"}
	h := start(t, t.TempDir(), func(c *Config) {
		c.Now = time.Now
		c.Nodes = func() []placement.Node {
			var out []placement.Node
			for _, n := range nodes {
				out = append(out, placement.Node{ID: string(n), TotalBytes: 16 << 30, AvailableBytes: 8 << 30, Backends: []string{"native-cpu"}})
			}
			return out
		}
	})
	src := event.Source{Role: event.RoleMaster, Node: node}
	for _, n := range nodes[1:] {
		if err := h.m.Report(ctx, src, event.NodeJoined{Node: n, AtUnixMs: 1}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := h.m.Execute(ctx, event.PlaceInstance{ID: "place-1", Model: catalog.BuiltinID, MinNodes: 2, ExcludedNodes: []ids.NodeID{"node-c"}})
	if err != nil {
		t.Fatal(err)
	}
	placed := evs[0].Event.(event.InstanceCreated).Placement
	if len(placed) != 2 {
		t.Fatalf("placement %+v", placed)
	}
	// Rank 0 loads; its edge to rank 1's node never connects.
	if err := h.m.Report(ctx, event.Source{Role: event.RoleWorker, Node: placed[0].Node}, event.RunnerStatusUpdated{Runner: "r0", Instance: "place-1",
		Rank: 0, Node: placed[0].Node, Status: event.RunnerLoading}); err != nil {
		t.Fatal(err)
	}
	gctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		GroupConnect{Self: node, Timeout: 500 * time.Millisecond, NewID: func() string { return "place-" + time.Now().Format("150405.000000000") },
			Now: time.Now, Logger: slog.New(slog.DiscardHandler),
			Link: func(_ ids.NodeID, inst ids.InstanceID, link int) (string, string) {
				if link == 0 {
					return "waiting", "timeout: no recent network activity"
				}
				return "", ""
			}}.Run(gctx, h.m)
	}()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := mustState(t, h.m)
		if _, gone := st.Instances["place-1"]; gone || len(st.Instances) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("not re-placed: %+v", st.Instances)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if len(st.Failures) != 1 || st.Failures[0].Instance != "place-1" || st.Failures[0].Category != event.FailureGroupConnect {
			t.Fatalf("failures %+v", st.Failures)
		}
		d := st.Failures[0].Detail
		for _, want := range []string{"rank 0 (node " + string(placed[0].Node), "loading", "edge 0 (rank 0 on " + string(placed[0].Node), "waiting: timeout",
			"edge 1 (rank 1 on " + string(placed[1].Node), "never started"} {
			if !strings.Contains(d, want) {
				t.Errorf("failure detail %q lacks %q", d, want)
			}
		}
		for id, inst := range st.Instances {
			if !slices.Contains(inst.ExcludedNodes, placed[1].Node) {
				t.Errorf("%s excludes %v, not the unreachable %s", id, inst.ExcludedNodes, placed[1].Node)
			}
			for _, sh := range inst.Placement {
				if sh.Node == placed[1].Node || sh.Node == "node-c" {
					t.Errorf("%s placed on %s: %+v", id, sh.Node, inst.Placement)
				}
			}
		}
		break
	}
}
