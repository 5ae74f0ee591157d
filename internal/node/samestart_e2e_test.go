package node_test

import (
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
