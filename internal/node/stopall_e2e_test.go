package node_test

import (
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestWholeClusterStopsOnSIGINT: Ctrl-C on every node of a cluster at
// once (a user stopping the lot) stops each within 3 s: none waits for
// peers that are going too.
func TestWholeClusterStopsOnSIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	nodes := loopbackCluster(t, 3)
	inst := nodes[0].place()
	nodes[0].waitStatus(inst, "ready")

	start := time.Now()
	for _, n := range nodes {
		n.cmd.Process.Signal(syscall.SIGINT)
	}
	var wg sync.WaitGroup
	took := make([]time.Duration, len(nodes))
	for i, n := range nodes {
		wg.Go(func() {
			select {
			case <-n.done:
				took[i] = time.Since(start)
			case <-time.After(20 * time.Second):
				took[i] = -1
			}
		})
	}
	wg.Wait()
	for i, d := range took {
		t.Logf("node %d stopped %v after SIGINT", i, d)
		if d < 0 || d > 3*time.Second {
			t.Errorf("node %d took %v to stop (want within 3 s); its log:\n%s", i, d, nodes[i].logs.String())
		}
	}
}
