package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestLiveNodes: a node started with --name shows by that name in skulk
// nodes (its id's start, leader, its cores, ok), in skulk ps's placement,
// the diagnostics and its start log; its instance counts.
func TestLiveNodes(t *testing.T) {
	n := startLiveNode(t, "--name", "kitchen")
	var self struct {
		ID   string `json:"nodeId"`
		Name string `json:"name"`
	}
	n.getJSON(t, "/v1/diagnostics/node", &self)
	if self.Name != "kitchen" {
		t.Errorf("/v1/diagnostics/node name %q", self.Name)
	}
	if !strings.Contains(n.log(), `msg="starting skulk node" node=`+self.ID+" name=kitchen") {
		t.Errorf("the start log does not name the node")
	}
	if code, out, errs := n.skulk(t, "", nil, "place", "stories260k"); code != 0 {
		t.Fatalf("place: exit %d %q %q", code, out, errs)
	}
	line := regexp.MustCompile(`(?m)^kitchen +` + regexp.QuoteMeta(shortID(self.ID)) + ` +leader +127\.0\.0\.1:\d+ +[1-9]\d* +\d+\.\dGiB/\d+\.\dGiB +ok +1$`)
	var out string
	for deadline := time.Now().Add(10 * time.Second); ; { // the name arrives with the node's first resources reading
		code, o, errs := n.skulk(t, "", nil, "nodes")
		if code != 0 {
			t.Fatalf("nodes: exit %d %q %q", code, o, errs)
		}
		if out = o; line.MatchString(out) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.HasPrefix(out, "NAME ") || !line.MatchString(out) {
		t.Fatalf("skulk nodes:\n%s\nwant a line %s", out, line)
	}
	if code, out, errs := n.skulk(t, "", nil, "ps"); code != 0 || !strings.Contains(out, "kitchen [0, 5)") {
		t.Errorf("ps: exit %d %q %q: the placement does not name the node", code, out, errs)
	}
	var diag struct {
		Nodes []struct{ Name string } `json:"nodes"`
	}
	n.getJSON(t, "/v1/diagnostics/cluster", &diag)
	if len(diag.Nodes) != 1 || diag.Nodes[0].Name != "kitchen" {
		t.Errorf("/v1/diagnostics/cluster nodes %+v", diag.Nodes)
	}
}
