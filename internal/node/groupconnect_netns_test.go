//go:build linux

package node_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

// TestNetnsGroupConnect: a split instance whose two stage nodes cannot
// reach each other (iptables drops the pair's traffic; the master reaches
// both) never links; after --group-connect-timeout the master fails it,
// with the edge that did not come up in the failure history, deletes it
// and places the model again without the node that could not be reached,
// where it serves. Then the same cut made mid-generation on a serving
// split: the request ends with an error event within 5 s and the deadline
// places the model again.
func TestNetnsGroupConnect(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace pipeline test")
	}
	const timeout = 8 * time.Second
	c := netns.New(t, netns.Options{Hosts: 4, Partitions: true})
	args := []string{"--no-mdns", "--group-connect-timeout", timeout.String()}
	nodes := []*netNode{startNet(t, c, c.Host(1), args)}
	for _, h := range c.Hosts()[1:] {
		nodes = append(nodes, startNet(t, c, h, append(args, "--bootstrap-peers", c.Host(1).Addr()+":52416")))
	}
	master, _ := netConverge(t, nodes, 4, 60*time.Second)
	dumpNodes = nodes
	api, others := byID(nodes, master)
	a, b, spare := others[0], others[1], others[2]
	c.PartitionGroups([]*netns.Host{a.host}, []*netns.Host{b.host})

	start := time.Now()
	code, body := api.do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "min_nodes": 2,
		"excluded_nodes": []string{master, spare.id()}})
	if code != 200 {
		t.Fatalf("place: %d %s", code, body)
	}
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(body, &placed)
	inst := placed.InstanceID
	in, ok := api.instances()[inst]
	if !ok || len(in.Placement) != 2 {
		t.Fatalf("placement: %+v", api.instances())
	}
	rank1 := in.Placement[1].Node

	// The failure is recorded and the model placed again elsewhere.
	type failure struct {
		Instance string `json:"instance"`
		Category string `json:"category"`
		Detail   string `json:"detail"`
	}
	var rec failure
	for rec.Instance == "" {
		_, b := api.do("GET", "/state", nil)
		var doc struct {
			Failures []failure `json:"failures"`
		}
		json.Unmarshal(b, &doc)
		for _, f := range doc.Failures {
			if f.Instance == inst {
				rec = f
			}
		}
		if in, ok := api.instances()[inst]; ok && in.Status == "ready" {
			t.Fatalf("the instance came up across the cut: %+v", in)
		}
		if time.Since(start) > timeout+60*time.Second {
			t.Fatalf("no failure recorded for %s %v after placement: %s", inst, time.Since(start), b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	failedAfter := time.Since(start)
	t.Logf("failed %v after placement: %s: %s", failedAfter, rec.Category, rec.Detail)
	if failedAfter < timeout {
		t.Errorf("failed %v after placement, before the %v deadline", failedAfter, timeout)
	}
	if rec.Category != "group_connect" || !strings.Contains(rec.Detail, "edge 0 (rank 0 on "+in.Placement[0].Node) ||
		!strings.Contains(rec.Detail, "rank 1 on "+rank1) {
		t.Errorf("failure %+v does not name the edge that did not connect", rec)
	}
	var again string
	for again == "" {
		for id, in := range api.instances() {
			if id == inst {
				continue
			}
			for _, p := range in.Placement {
				if p.Node == rank1 || p.Node == master || p.Node == spare.id() {
					t.Fatalf("placed again on %s (unreachable or excluded): %+v", p.Node, in)
				}
			}
			if in.Status == "ready" {
				again = id
			}
		}
		if time.Since(start) > timeout+90*time.Second {
			t.Fatalf("not placed again and ready: %+v", api.instances())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, gone := api.instances()[inst]; gone {
		t.Errorf("the failed instance %s is still in the State", inst)
	}
	t.Logf("placed again as %s, ready %v after the first placement", again[:8], time.Since(start))
	chatEventually(t, api, "after the re-placement", 30*time.Second)

	// An edge cut mid-generation (both stage nodes stay members: the
	// master reaches them): the request ends with an error event within
	// 5 s, the runners cannot link again, and the deadline places the model
	// again without the node the cut hides.
	c.HealAll()
	if code, b := api.do("DELETE", "/instance/"+again, nil); code != 200 {
		t.Fatalf("delete %s: %d %s", again, code, b)
	}
	inst, ranks := placeSplit(t, api, map[string]any{"min_nodes": 2, "excluded_nodes": []string{master, spare.id()}})
	failMidStream(t, api, "the edge between the stage nodes cut", func() {
		c.PartitionGroups([]*netns.Host{a.host}, []*netns.Host{b.host})
	})
	cut := time.Now()
	for {
		_, gone := api.instances()[inst]
		ready := ""
		for id, in := range api.instances() {
			if id != inst && in.Model == "stories260k" && in.Status == "ready" {
				ready = id
				for _, p := range in.Placement {
					if p.Node == ranks[1] {
						t.Fatalf("placed again on %s, which rank 0's node cannot reach: %+v", p.Node, in)
					}
				}
			}
		}
		if !gone && ready != "" {
			t.Logf("placed again as %s %v after the cut", ready[:8], time.Since(cut))
			break
		}
		if time.Since(cut) > timeout+60*time.Second {
			t.Fatalf("not placed again %v after the edge was cut: %+v", time.Since(cut), api.instances())
		}
		time.Sleep(200 * time.Millisecond)
	}
	chatEventually(t, api, "after the edge cut", 30*time.Second)
}
