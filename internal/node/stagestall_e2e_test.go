package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestStageRunnerStall stops (SIGSTOP) the runner of a pipeline's second
// stage mid-stream: the watchdog on its node kills it, the stream ends with
// an error event within 5 s, the node's diagnostics name the stall, and
// the instance serves again.
func TestStageRunnerStall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	var gossip []string
	for range 2 {
		gossip = append(gossip, fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	}
	var nodes []*clusterNode
	for i := range gossip {
		nodes = append(nodes, startClusterNode(t, t.TempDir(), gossip[i], gossip))
	}
	converged(t, nodes, len(nodes), 30*time.Second)
	code, b := nodes[0].do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "min_nodes": 2})
	var r struct {
		InstanceID string `json:"instance_id"`
	}
	if err := json.Unmarshal(b, &r); code != 200 || err != nil {
		t.Fatalf("place: %d %s", code, b)
	}
	for _, n := range nodes {
		n.waitStatus(r.InstanceID, "ready")
	}
	_, b = nodes[0].do("GET", "/state", nil)
	var st struct {
		Instances map[string]struct {
			Placement []struct {
				Node string `json:"node"`
			} `json:"placement"`
		} `json:"instances"`
	}
	json.Unmarshal(b, &st)
	placement := st.Instances[r.InstanceID].Placement
	if len(placement) != 2 {
		t.Fatalf("placement %+v, want 2 ranks", placement)
	}
	var stage *clusterNode
	for _, n := range nodes {
		if nodeID(n.home) == placement[1].Node {
			stage = n
		}
	}
	pid := stage.cmd.Process.Pid
	var stopped time.Time
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := nodes[0].stream(ctx, storyRequest(true, 1500), stopRunnerAt(t, pid, 3, &stopped))
	took := time.Since(stopped)
	if err != nil {
		t.Fatal(err)
	}
	if stopped.IsZero() || res.done || res.errMsg == "" {
		t.Fatalf("the stream of a stopped stage ended with %+v, want an error event", res)
	}
	t.Logf("error event %v after the stage's SIGSTOP: %s", took, res.errMsg)
	if took > 5*time.Second {
		t.Errorf("the error event came %v after the stop, want within 5 s", took)
	}
	// The stage's node names the stall; the instance serves again.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stage.logs.String(), "runner stalled") {
		if time.Now().After(deadline) {
			t.Fatalf("the stage's node never said its runner stalled:\n%s", stage.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		if code, b := nodes[0].do("POST", "/v1/chat/completions", storyRequest(false, 64)); code == 200 && strings.Contains(string(b), "Lily") {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the instance did not serve again: %d %s", code, b)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
