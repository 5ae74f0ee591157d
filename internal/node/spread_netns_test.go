//go:build linux

package node_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

// TestNetnsReplicasSpread: twelve placements of one model on a cluster of
// twelve machines land on twelve different machines (they once landed on
// two, whichever read the most free memory, while ten idled).
func TestNetnsReplicasSpread(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the 12-host netns test")
	}
	const hosts = 12
	c := netns.New(t, netns.Options{Hosts: hosts})
	var peers []string
	for _, h := range c.Hosts() {
		peers = append(peers, h.Addr()+":52416")
	}
	var nodes []*netNode
	for _, h := range c.Hosts() {
		nodes = append(nodes, startNet(t, c, h, []string{"--bootstrap-peers", strings.Join(peers, ","), "--no-mdns"}))
	}
	netConverge(t, nodes, hosts, 120*time.Second)
	api := nodes[0]
	// Every machine's resources reading has reached the API node.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, b := api.do("GET", "/v1/diagnostics/cluster", nil)
		var d struct {
			Nodes []struct {
				Cores int `json:"cores"`
			} `json:"nodes"`
		}
		read := 0
		if json.Unmarshal(b, &d) == nil {
			for _, n := range d.Nodes {
				if n.Cores > 0 {
					read++
				}
			}
		}
		if read == hosts {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d machines' resources read after 60 s", read, hosts)
		}
	}
	on := map[string]string{}
	for k := range hosts {
		code, b := api.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"})
		if code != 200 {
			t.Fatalf("placement %d: %d %s", k, code, b)
		}
		var r struct {
			InstanceID string `json:"instance_id"`
		}
		json.Unmarshal(b, &r)
		st, _ := api.state()
		for deadline := time.Now().Add(10 * time.Second); len(st.Instances[r.InstanceID].Placement) == 0; st, _ = api.state() {
			if time.Now().After(deadline) {
				t.Fatalf("placement %d (%s) not in the API node's State", k, r.InstanceID)
			}
			time.Sleep(50 * time.Millisecond)
		}
		node := st.Instances[r.InstanceID].Placement[0].Node
		if prev, ok := on[node]; ok {
			t.Fatalf("placement %d (%s) went to %s, which already runs %s, with %d machines holding none", k, r.InstanceID, node, prev, hosts-len(on))
		}
		on[node] = r.InstanceID
	}
	t.Logf("12 placements on %d machines", len(on))
}
