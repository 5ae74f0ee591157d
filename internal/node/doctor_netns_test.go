//go:build linux

package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

type doctorCheck struct {
	Name, Status, Detail, Fix string
}

// doctorOn runs `skulk doctor --json` on the node's own host, as its
// operator would, and returns the checks and the exit status.
func doctorOn(t *testing.T, n *netNode) ([]doctorCheck, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	out, err := n.host.Exec(ctx, "env", "SKULK_API_KEY="+n.key, "SKULK_CLUSTER_KEY="+netClusterKey(n.c), "SKULK_HOST=",
		"HF_ENDPOINT=http://127.0.0.1:9", skulkBin, "doctor", "--json", "--home", n.home, "--host", n.host.Addr()+":52415")
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("skulk doctor: %v\n%s", err, out)
	}
	var doc struct{ Checks []doctorCheck }
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("skulk doctor --json: %v\n%s", err, out)
	}
	for _, c := range doc.Checks {
		if c.Status != "ok" {
			t.Logf("doctor on %s: %s %s: %s (fix: %s)", n.host.Name(), c.Status, c.Name, c.Detail, c.Fix)
		}
	}
	return doc.Checks, code
}

// waitDiag waits until the node's cluster diagnostics satisfy ok.
func waitDiag(t *testing.T, n *netNode, what string, ok func(diag) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if d, got := n.diag(); got && ok(d) {
			return
		}
		if time.Now().After(deadline) {
			d, _ := n.diag()
			t.Fatalf("%s: not within 60 s: %+v", what, d)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestNetnsDoctor is the acceptance of `skulk doctor`'s network checks:
// with a node behind a partition, doctor on another node names that node
// and the port it cannot reach; with a node of another cluster key
// knocking, doctor says it was refused for another key.
func TestNetnsDoctor(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace doctor test")
	}
	c := netns.New(t, netns.Options{Hosts: 3, Partitions: true})
	peer := []string{"--bootstrap-peers", c.Host(1).Addr() + ":52416"}
	nodes := []*netNode{startNet(t, c, c.Host(1), nil)}
	for _, h := range c.Hosts()[1:] {
		nodes = append(nodes, startNet(t, c, h, peer))
	}
	netConverge(t, nodes, 3, 60*time.Second)

	checks, code := doctorOn(t, nodes[0])
	for _, ch := range checks {
		if strings.HasPrefix(ch.Name, "peer ") && ch.Status != "ok" {
			t.Errorf("a whole cluster: %+v", ch)
		}
	}
	if code != 0 {
		t.Errorf("a whole cluster: exit %d: %+v", code, checks)
	}

	// A node behind a partition: doctor on node 1 names it and its port.
	cut := nodes[2]
	c.Host(3).Partition()
	waitDiag(t, nodes[0], "node 1 to count node 3 unreachable", func(d diag) bool {
		for _, n := range d.Nodes {
			if n.NodeID == cut.id() {
				return !n.Reachable
			}
		}
		return false
	})
	checks, code = doctorOn(t, nodes[0])
	found := false
	for _, ch := range checks {
		if ch.Name == "peer "+cut.id() {
			found = true
			if ch.Status != "fail" || !strings.Contains(ch.Detail, cut.id()) || !strings.Contains(ch.Detail, c.Host(3).Addr()) ||
				!strings.Contains(ch.Detail, "52416/tcp blocked") || ch.Fix == "" {
				t.Errorf("the partitioned node: %+v", ch)
			}
		}
		if ch.Name == "peer "+nodes[1].id() && ch.Status != "ok" {
			t.Errorf("the node still reached: %+v", ch)
		}
	}
	if !found || code != 1 {
		t.Errorf("exit %d; checks %+v", code, checks)
	}
	c.Host(3).Heal()
	cut.proc.Stop()

	// A node of another cluster key knocks: doctor says it was refused.
	wrong := startNet(t, c, c.Host(3), peer, "SKULK_CLUSTER_KEY=another-cluster-key-0123456789")
	if _, err := wrong.proc.WaitLog(`could not be decrypted`, 60*time.Second); err != nil {
		t.Fatalf("the wrong-key node never logged the refusal: %v", err)
	}
	waitDiag(t, nodes[0], "node 1 to list the refusal", func(d diag) bool {
		for _, r := range d.Refused {
			if strings.HasPrefix(r.Addr, c.Host(3).Addr()+":") {
				return true
			}
		}
		return false
	})
	checks, code = doctorOn(t, nodes[0])
	found = false
	for _, ch := range checks {
		if ch.Name == "refused "+c.Host(3).Addr() {
			found = true
			if ch.Status != "fail" || !strings.Contains(ch.Detail, "refused: another cluster key or network version") ||
				!strings.Contains(ch.Fix, "skulk run --join INVITE") {
				t.Errorf("the refused node: %+v", ch)
			}
		}
	}
	if !found || code != 1 {
		t.Errorf("exit %d; checks %+v", code, checks)
	}
}
