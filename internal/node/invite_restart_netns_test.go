//go:build linux

package node_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

// TestNetnsInviteRestart: two nodes joined by an invite with mDNS off are
// both restarted with no flags but --no-mdns. The replicated configuration
// names the members and where they gossip, so they find each other; one
// leads, and the decision made before the restart is there.
func TestNetnsInviteRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace cluster test")
	}
	c := netns.New(t, netns.Options{Hosts: 2})
	first := startNet(t, c, c.Host(1), []string{"--no-mdns"}, "SKULK_CLUSTER_KEY=")
	if _, err := first.proc.WaitLog(`cluster-invite.txt`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	invite := inviteLine(t, first.home, "--peer", c.Host(1).Addr()+":52416")
	second := startNet(t, c, c.Host(2), []string{"--no-mdns", "--join", invite})
	nodes := []*netNode{first, second}
	netConverge(t, nodes, 2, 60*time.Second)
	code, b := second.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"})
	if code != 200 {
		t.Fatalf("place: %d %s", code, b)
	}
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(b, &placed)

	for _, n := range nodes {
		n.proc.Stop()
	}
	// No --join, no bootstrap peers, no mDNS: only what the homes keep.
	first.args = []string{skulkBin, "run", "--home", first.home, "--threads", "1", "--no-mdns"}
	second.args = []string{skulkBin, "run", "--home", second.home, "--threads", "1", "--no-mdns"}
	first.env = []string{"SKULK_API_KEY=" + netAdminKey}
	second.env = []string{"SKULK_API_KEY=" + netAdminKey}
	second.start()
	first.start()
	netConverge(t, nodes, 2, 60*time.Second)
	for _, n := range nodes {
		s, ok := n.state()
		if _, has := s.Instances[placed.InstanceID]; !ok || !has {
			t.Fatalf("%s lost the placement across the restart: %+v", n.host.Name(), s.Instances)
		}
		d, _ := n.diag()
		if d.voters() != 2 {
			t.Fatalf("%s: %d voters after the restart, want 2", n.host.Name(), d.voters())
		}
	}
}
