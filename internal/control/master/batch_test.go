package master

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/testkit"
)

// entries records the batches a master proposes.
type entries struct {
	mu  sync.Mutex
	all [][]event.Event
}

func (e *entries) wrap(c *Config) {
	inner := c.Propose
	c.Propose = func(ctx context.Context, evs []event.Event) ([]event.IndexedEvent, error) {
		e.mu.Lock()
		e.all = append(e.all, slices.Clone(evs))
		e.mu.Unlock()
		return inner(ctx, evs)
	}
}

func (e *entries) since(n int) [][]event.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.all[n:])
}

func (e *entries) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.all)
}

func threeNodes(nodes *[]ids.NodeID, mu *sync.Mutex) func(*Config) {
	return func(c *Config) {
		c.Now = time.Now
		c.Nodes = func() []placement.Node {
			mu.Lock()
			defer mu.Unlock()
			var out []placement.Node
			for _, n := range *nodes {
				out = append(out, placement.Node{ID: string(n), TotalBytes: 16 << 30, AvailableBytes: 8 << 30, Backends: []string{"native-cpu"}})
			}
			return out
		}
	}
}

// three is a master whose cluster has three live nodes, and the entries
// it proposes.
type three struct {
	h     *harness
	rec   *entries
	mu    sync.Mutex
	nodes []ids.NodeID // the live members (a test removes one to lose it)
}

func startThree(t *testing.T) *three {
	t.Helper()
	c := &three{rec: &entries{}, nodes: []ids.NodeID{node, "node-b", "node-c"}}
	c.h = start(t, t.TempDir(), threeNodes(&c.nodes, &c.mu), c.rec.wrap)
	src := event.Source{Role: event.RoleMaster, Node: node}
	for _, n := range c.nodes[1:] {
		if err := c.h.m.Report(context.Background(), src, event.NodeJoined{Node: n, AtUnixMs: 1}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestBatch(t *testing.T) {
	testkit.NoLeaks(t)
	ctx := context.Background()
	c := startThree(t)
	h, rec, src := c.h, c.rec, event.Source{Role: event.RoleMaster, Node: node}
	before := mustState(t, h.m)
	n := rec.count()

	// A required step refused: nothing commits.
	_, err := h.m.Batch(ctx, []Step{
		{Try: []event.Command{event.PlaceInstance{ID: "p-1", Model: catalog.BuiltinID}}},
		{Source: src, Fact: event.NodeLeft{Node: "node-z", Reason: event.LeaveTimedOut}, Required: true},
	})
	if err == nil {
		t.Fatal("a batch with a refused required step committed")
	}
	if got := mustState(t, h.m); got.LastIndex != before.LastIndex || len(got.Instances) != 0 || rec.count() != n {
		t.Fatalf("a refused batch changed the State: index %d → %d, instances %v", before.LastIndex, got.LastIndex, got.Instances)
	}

	// A refused optional step is left out; a fallback decides; the rest
	// commits as one entry.
	out, err := h.m.Batch(ctx, []Step{
		{Try: []event.Command{event.PlaceInstance{ID: "p-2", Model: "no-such-model"}}},
		{Try: []event.Command{
			event.PlaceInstance{ID: "p-3", Model: catalog.BuiltinID, MinNodes: 9},
			event.PlaceInstance{ID: "p-4", Model: catalog.BuiltinID},
		}},
		{Source: src, Fact: event.NodeLeft{Node: "node-c", Reason: event.LeaveTimedOut}, Required: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || out[0].Err == nil || len(out[0].Events) != 0 || out[1].Err != nil || out[2].Err != nil {
		t.Fatalf("outcomes %+v", out)
	}
	if placedInstance(out[1].Events) != "p-4" || len(out[2].Events) != 1 {
		t.Fatalf("outcomes %+v", out)
	}
	if got := rec.since(n); len(got) != 1 || len(got[0]) != len(out[1].Events)+1 {
		t.Fatalf("entries proposed %v, want one holding the placement and NodeLeft", got)
	}
	st := mustState(t, h.m)
	if _, gone := st.Nodes["node-c"]; gone || st.Instances["p-4"].Model != catalog.BuiltinID {
		t.Fatalf("State after the batch: instances %v, nodes %v", st.Instances, st.NodeIDs())
	}
}

// A lost node's instances are torn down, the node removed and the
// instances placed again in one entry: no State in between has the
// model without an instance.
func TestNodeLossInOneEntry(t *testing.T) {
	testkit.NoLeaks(t)
	ctx := context.Background()
	c := startThree(t)
	h, rec := c.h, c.rec
	evs, err := h.m.Execute(ctx, event.PlaceInstance{ID: "split", Model: catalog.BuiltinID, MinNodes: 2, ExcludedNodes: []ids.NodeID{node}})
	if err != nil {
		t.Fatal(err)
	}
	placed := evs[0].Event.(event.InstanceCreated).Placement
	lost := placed[1].Node
	n := rec.count()
	c.mu.Lock()
	c.nodes = slices.DeleteFunc(slices.Clone(c.nodes), func(x ids.NodeID) bool { return x == lost })
	c.mu.Unlock()

	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		NodeLoss{Self: node, NewID: func() string { return "again-" + time.Now().Format("150405.000000000") }, Now: time.Now,
			Started: time.Now().Add(-time.Hour), Logger: slog.New(slog.DiscardHandler),
			Members: func() []ids.NodeID { c.mu.Lock(); defer c.mu.Unlock(); return slices.Clone(c.nodes) }}.Run(lctx, h.m)
	}()
	defer func() { stop(); <-done }()
	testkit.Eventually(t, 10*time.Second, "the lost node's removal", func() bool {
		_, ok := mustState(t, h.m).Nodes[lost]
		return !ok
	})

	got := rec.since(n)
	if len(got) != 1 {
		t.Fatalf("node loss proposed %d entries, want 1: %v", len(got), got)
	}
	var kinds []string
	for _, ev := range got[0] {
		kinds = append(kinds, string(ev.Kind()))
	}
	if kinds[0] != "InstanceDeleted" || !slices.Contains(kinds, "NodeLeft") || !slices.Contains(kinds, "InstanceCreated") {
		t.Fatalf("the entry holds %v", kinds)
	}
	st := mustState(t, h.m)
	if len(st.Instances) != 1 {
		t.Fatalf("instances after the loss: %+v", st.Instances)
	}
	for id, inst := range st.Instances {
		if id == "split" || !slices.Equal(inst.ExcludedNodes, []ids.NodeID{node}) {
			t.Fatalf("re-placed as %s excluding %v", id, inst.ExcludedNodes)
		}
		for _, sh := range inst.Placement {
			if sh.Node == lost || sh.Node == node {
				t.Fatalf("re-placed on %s: %+v", sh.Node, inst.Placement)
			}
		}
	}
}
