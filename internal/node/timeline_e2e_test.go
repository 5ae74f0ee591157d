package node_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type timelineDoc struct {
	Events []struct {
		At     time.Time `json:"at"`
		Kind   string    `json:"kind"`
		Node   string    `json:"node"`
		Detail string    `json:"detail"`
	} `json:"events"`
}

func (n *node) timeline(query string) timelineDoc {
	n.t.Helper()
	code, b := n.do("GET", "/v1/diagnostics/cluster/timeline"+query, nil)
	if code != 200 {
		n.t.Fatalf("GET the timeline%s: %d %s", query, code, b)
	}
	var doc timelineDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		n.t.Fatalf("timeline %s: %v", b, err)
	}
	return doc
}

// TestClusterTimeline: after a placement and a delete, the node's timeline
// lists both with their instance id, after this node's election and in
// order, with the runner's phases between them; the window is checked.
func TestClusterTimeline(t *testing.T) {
	n := startNode(t, t.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")
	if code, b := n.do("DELETE", "/instance/"+inst, nil); code != 200 {
		t.Fatalf("delete: %d %s", code, b)
	}
	n.waitStatus(inst, "gone")

	var doc timelineDoc
	// The node records an event once it is applied, a moment after the
	// State shows it.
	find := func(kind string) int {
		for i, e := range doc.Events {
			if e.Kind == kind && strings.Contains(e.Detail, inst) {
				return i
			}
		}
		return -1
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		doc = n.timeline("")
		if find("InstanceDeleted") >= 0 || time.Now().After(deadline) {
			break
		}
	}
	created, deleted := find("InstanceCreated"), find("InstanceDeleted")
	if created < 0 || deleted < created {
		t.Fatalf("the timeline has the placement at %d and the deletion at %d: %+v", created, deleted, doc.Events)
	}
	master, ready := -1, -1
	for i, e := range doc.Events {
		if i > 0 && e.At.Before(doc.Events[i-1].At) {
			t.Errorf("entry %d (%s %s) is older than the one before it", i, e.Kind, e.At)
		}
		switch {
		case e.Kind == "BecameMaster" && master < 0:
			master = i
		case e.Kind == "RunnerStatusUpdated" && strings.Contains(e.Detail, inst) && strings.Contains(e.Detail, " ready"):
			ready = i
		}
	}
	if master < 0 || master > created {
		t.Errorf("this node's election is at %d, the placement at %d: %+v", master, created, doc.Events)
	}
	if ready < created || ready > deleted {
		t.Errorf("the runner's ready phase is at %d, not between the placement (%d) and the deletion (%d)", ready, created, deleted)
	}
	if e := doc.Events[created]; e.Node == "" || !strings.Contains(e.Detail, "stories260k") {
		t.Errorf("the placement entry names no node or model: %+v", e)
	}
	if got := n.timeline("?minutes=1"); len(got.Events) == 0 {
		t.Error("the last minute's timeline is empty")
	}
	for _, bad := range []string{"?minutes=0", "?minutes=-3", "?minutes=soon", "?minutes=99999999"} {
		if code, b := n.do("GET", "/v1/diagnostics/cluster/timeline"+bad, nil); code != 400 || !strings.Contains(string(b), "minutes") {
			t.Errorf("timeline%s: %d %s, want a 400 about minutes", bad, code, b)
		}
	}
}
