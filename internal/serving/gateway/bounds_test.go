package gateway

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/plane"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
)

// TestPlaceAndPreviewsCountPlacedRunners drives POST /place_instance and GET
// /instance/previews through the gateway and a real master against a node
// that allows two runners: the caller's answer and the previews both count
// the runners the State places, though the node's telemetry never changes.
func TestPlaceAndPreviewsCountPlacedRunners(t *testing.T) {
	builtin, err := catalog.BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	cat, errs := catalog.Build(cards{builtin})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	log, err := eventlog.Open(t.TempDir(), eventlog.Options{FreeSpaceFloor: eventlog.NoFloor})
	if err != nil {
		t.Fatal(err)
	}
	const node = ids.NodeID("node-a")
	nodes := func() []placement.Node {
		return []placement.Node{{ID: string(node), TotalBytes: 16 << 30, AvailableBytes: 8 << 30, Backends: []string{"native-cpu"}, MaxInstances: 2}}
	}
	m, err := plane.New(plane.Config{Node: node, Log: log, Found: true, StartedAt: time.Now(), Nodes: nodes,
		Card: func(id ids.ModelID) (catalog.Card, bool) { return cat.Get(string(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	gw := New(Config{Node: node, Master: m, Catalog: func() *catalog.Catalog { return cat }, Nodes: nodes,
		NewID: func() string { return fmt.Sprintf("id-%04d", n.Add(1)) }})
	ctx := t.Context()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() { <-done; log.Close() })
	for deadline := time.Now().Add(10 * time.Second); !m.IsMaster(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the control plane did not elect itself")
		}
	}

	// previews returns the width-1 preview's estimate, or false when none.
	previews := func() (placement.Estimate, bool) {
		t.Helper()
		doc, err := gw.Previews(ctx, ids.ModelID(builtin.ID))
		if err != nil {
			t.Fatal(err)
		}
		pv := doc.(map[string]any)["previews"].([]placement.Preview)
		if len(pv) == 0 {
			return placement.Estimate{}, false
		}
		return pv[0].PerNode[0], true
	}
	place := func() (ids.InstanceID, error) {
		r, err := gw.Place(ctx, request.PlaceRequest{ModelID: ids.ModelID(builtin.ID)})
		return r.InstanceID, err
	}

	var first ids.InstanceID
	for i := range 2 {
		e, ok := previews()
		if !ok || e.Runners != i {
			t.Fatalf("before placement %d: preview %+v (%v), want %d runners counted", i+1, e, ok, i)
		}
		if i == 1 && (e.Committed != e.Total || e.Available != min(e.Reported, e.Memory-e.Committed)) {
			t.Errorf("preview %+v does not charge the placed runner as it would charge a new one", e)
		}
		id, err := place()
		if err != nil {
			t.Fatalf("placement %d: %v", i+1, err)
		}
		if i == 0 {
			first = id
		}
	}
	if e, ok := previews(); ok {
		t.Errorf("the node is full but a preview offers %+v", e)
	}
	_, err = place()
	if placement.Status(err) != 409 || !strings.Contains(fmt.Sprint(err), "--max-instances") {
		t.Fatalf("third placement: %v (status %d), want a 409 naming --max-instances", err, placement.Status(err))
	}
	if err := gw.DeleteInstance(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := place(); err != nil {
		t.Fatalf("placement after a delete: %v", err)
	}
}
