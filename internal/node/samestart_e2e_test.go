package node_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStartedTogetherOneCluster: two fresh nodes started at the same
// moment, the second given the first as its bootstrap peer, form one
// cluster. The second's first join found nothing listening yet; it used to
// found a cluster of its own two seconds later, before retrying, and the
// two then gossiped as members of two clusters that never merged.
func TestStartedTogetherOneCluster(t *testing.T) {
	for round := range 3 {
		a, b := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
		var nodes [2]*clusterNode
		var wg sync.WaitGroup
		wg.Go(func() { nodes[0] = startClusterNode(t, t.TempDir(), a, nil) })
		wg.Go(func() { nodes[1] = startClusterNode(t, t.TempDir(), b, []string{a}) })
		wg.Wait()
		converged(t, nodes[:], 2, 30*time.Second)
		founded := 0
		for _, n := range nodes {
			founded += strings.Count(n.logs.String(), "founded a new cluster")
		}
		if founded != 1 {
			t.Fatalf("round %d: %d nodes founded a cluster, want 1", round, founded)
		}
	}
}

// TestForeignClusterShown: a node that founded a cluster of its own and is
// then started with another cluster's member as its bootstrap peer (the
// same cluster key) gossips with it but stays in its own Raft group: the
// other cluster's diagnostics name it as foreign and its log says what to
// do, once.
func TestForeignClusterShown(t *testing.T) {
	a := startClusterNode(t, t.TempDir(), fmt.Sprintf("127.0.0.1:%d", freePort(t)), nil)
	converged(t, []*clusterNode{a}, 1, 30*time.Second)
	b := startClusterNode(t, t.TempDir(), fmt.Sprintf("127.0.0.1:%d", freePort(t)), nil)
	converged(t, []*clusterNode{b}, 1, 30*time.Second)
	bID := nodeID(b.home)
	b.args = append(b.args, "--bootstrap-peers", a.gossip)
	b.restart(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := a.do("GET", "/v1/diagnostics/cluster", nil)
		var d struct {
			Consensus struct {
				Cluster string `json:"cluster"`
				Foreign []struct {
					Node    string `json:"nodeId"`
					Cluster string `json:"cluster"`
				} `json:"foreign"`
			} `json:"consensus"`
		}
		if code == 200 && json.Unmarshal(body, &d) == nil && len(d.Consensus.Foreign) == 1 {
			f := d.Consensus.Foreign[0]
			if f.Node != bID || f.Cluster == "" || f.Cluster == d.Consensus.Cluster {
				t.Fatalf("foreign member %+v (this cluster %s), want %s of another", f, d.Consensus.Cluster, bID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other cluster's node is not shown as foreign after 30 s: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if got := strings.Count(a.logs.String(), "its log belongs to another"); got != 1 {
		t.Fatalf("the warning was logged %d times, want once:\n%s", got, a.logs.String())
	}
}
