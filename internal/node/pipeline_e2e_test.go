package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPipelineAcrossNodes: stories260K placed on two loopback nodes
// (min_nodes 2) runs as one pipeline, rank 0's runner on one node and rank
// 1's on the other joined over QUIC (skulk/edge/1); chat through either
// node's API gives llama.cpp's greedy text, plain and streamed.
func TestPipelineAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	gossip := []string{fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	var nodes []*clusterNode
	for i := range gossip {
		nodes = append(nodes, startClusterNode(t, t.TempDir(), gossip[i], gossip))
	}
	converged(t, nodes, 2, 30*time.Second)
	code, b := nodes[0].do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "min_nodes": 2})
	if code != 200 {
		t.Fatalf("place: %d %s", code, b)
	}
	var r struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(b, &r)
	start := time.Now()
	for _, n := range nodes {
		n.waitStatus(r.InstanceID, "ready")
	}
	t.Logf("the 2-node pipeline was ready %v after placement", time.Since(start))
	if rs := nodes[0].state().Instances[r.InstanceID].Runners; len(rs) != 2 {
		t.Fatalf("%d runners, want 2 ranks", len(rs))
	}
	for i, n := range nodes {
		code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 64))
		var resp struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &resp); code != 200 || err != nil || len(resp.Choices) != 1 || resp.Choices[0].Message.Content != llamaCppStory {
			t.Fatalf("chat through node %d: %d %s", i, code, b)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		res, err := n.stream(ctx, storyRequest(true, 64), nil)
		cancel()
		if err != nil || res.content != llamaCppStory || res.errMsg != "" || !res.done {
			t.Fatalf("streamed chat through node %d: %+v %v", i, res, err)
		}
	}
	// What the pipeline cannot do yet is a clear 400.
	req := storyRequest(false, 8)
	req["logprobs"] = true
	if code, b := nodes[1].do("POST", "/v1/chat/completions", req); code != 400 || !strings.Contains(string(b), "logprobs") {
		t.Fatalf("logprobs on a pipeline: %d %s", code, b)
	}
	req = storyRequest(false, 8)
	req["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{
		"name": "s", "schema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}}}
	if code, b := nodes[1].do("POST", "/v1/chat/completions", req); code != 400 {
		t.Fatalf("a JSON schema on a pipeline: %d %s", code, b)
	}

	// Killing the later rank's runner mid-stream ends the request with an
	// error event within 5 s, and the pipeline comes back.
	_, b = nodes[0].do("GET", "/state", nil)
	var st struct {
		Instances map[string]struct {
			Placement []struct {
				Node string `json:"node"`
			} `json:"placement"`
		} `json:"instances"`
	}
	json.Unmarshal(b, &st)
	later := nodes[1]
	if st.Instances[r.InstanceID].Placement[1].Node == nodeID(nodes[0].home) {
		later = nodes[0]
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var killed time.Time
	res, err := nodes[0].stream(ctx, storyRequest(true, 100000), func(i int, _ string) {
		if i == 2 {
			pids := runnerPIDs(later.cmd.Process.Pid)
			if len(pids) != 1 {
				t.Errorf("the later rank's node runs runners %v", pids)
			}
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
			killed = time.Now()
		}
	})
	if err != nil || res.errMsg == "" {
		t.Fatalf("the stream after rank 1 was killed: %+v %v", res, err)
	}
	if d := time.Since(killed); d > 5*time.Second {
		t.Fatalf("the error came %v after the kill", d)
	}
	t.Logf("error event %v after the kill: %s", time.Since(killed), res.errMsg)
	for _, n := range nodes {
		n.waitStatus(r.InstanceID, "ready")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, b := nodes[1].do("POST", "/v1/chat/completions", storyRequest(false, 64))
		if code == 200 && strings.Contains(string(b), llamaCppStory[:40]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart: %d %s", code, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
