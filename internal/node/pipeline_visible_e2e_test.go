package node_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// edgeDoc is an edge of GET /v1/diagnostics/cluster.
type edgeDoc struct {
	Instance string  `json:"instance"`
	Link     int     `json:"link"`
	FromRank int     `json:"fromRank"`
	FromNode string  `json:"fromNode"`
	ToRank   int     `json:"toRank"`
	ToNode   string  `json:"toNode"`
	State    string  `json:"state"`
	Bytes    uint64  `json:"bytes"`
	Objects  uint64  `json:"objects"`
	P50Ms    float64 `json:"p50Ms"`
	P99Ms    float64 `json:"p99Ms"`
}

func (n *node) edges(inst string) []edgeDoc {
	n.t.Helper()
	code, b := n.do("GET", "/v1/diagnostics/cluster", nil)
	var doc struct {
		Edges []edgeDoc `json:"edges"`
	}
	if code != 200 || json.Unmarshal(b, &doc) != nil {
		n.t.Fatalf("cluster diagnostics: %d %s", code, b)
	}
	var out []edgeDoc
	for _, e := range doc.Edges {
		if e.Instance == inst {
			out = append(out, e)
		}
	}
	return out
}

// TestPipelineVisible: a split instance on two loopback nodes shows each
// rank in /state (node, layers, runner status) and in `skulk ps`, and each
// of its two edges in /v1/diagnostics/cluster through either node; a chat
// moves every edge's bytes and objects and gives it a hop latency.
func TestPipelineVisible(t *testing.T) {
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
	inst := r.InstanceID
	nodes[0].waitStatus(inst, "ready")

	// /state: every rank's node, layers and runner status.
	_, b = nodes[1].do("GET", "/state", nil)
	var st struct {
		Instances map[string]struct {
			Placement []struct {
				Node       string `json:"node"`
				LayerStart int    `json:"layer_start"`
				LayerEnd   int    `json:"layer_end"`
			} `json:"placement"`
			Runners []struct {
				Status string `json:"status"`
			} `json:"runners"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	in := st.Instances[inst]
	if len(in.Placement) != 2 || len(in.Runners) != 2 || in.Placement[0].Node == in.Placement[1].Node ||
		in.Placement[0].LayerStart != 0 || in.Placement[0].LayerEnd != in.Placement[1].LayerStart {
		t.Fatalf("/state of the split instance: %s", b)
	}
	for i, run := range in.Runners {
		if run.Status != "ready" && run.Status != "running" {
			t.Errorf("rank %d's runner is %s", i, run.Status)
		}
	}
	// skulk ps: a row per rank under the instance.
	_, out := nodes[1].cli("ps")
	for i, p := range in.Placement {
		want := fmt.Sprintf("rank %d", i)
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, want) {
				line = l
			}
		}
		// The node shows by its name, with the start of its id where
		// names repeat (both test nodes share the machine's name).
		if !strings.Contains(line, p.Node[:8]) || !strings.Contains(line, fmt.Sprintf("layers [%d, %d)", p.LayerStart, p.LayerEnd)) {
			t.Errorf("skulk ps has no row for rank %d on %s:\n%s", i, p.Node, out)
		}
	}

	// Both edges, as the sending node reports them, seen through either node.
	var before []edgeDoc
	deadline := time.Now().Add(20 * time.Second)
	for {
		before = nodes[1].edges(inst)
		if len(before) == 2 && before[0].State == "connected" && before[1].State == "connected" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("edges of %s: %+v", inst, before)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for k, e := range before {
		if e.Link != k || e.FromRank != k || e.ToRank != (k+1)%2 || e.FromNode != in.Placement[k].Node || e.ToNode != in.Placement[(k+1)%2].Node {
			t.Fatalf("edge %d: %+v", k, e)
		}
	}
	if got, _, _ := chatContent(nodes[0], storyRequest(false, 64)); got != llamaCppStory {
		t.Fatalf("chat: %q", got)
	}
	var after []edgeDoc
	deadline = time.Now().Add(20 * time.Second)
	for {
		moved := 0
		for _, n := range nodes {
			after = n.edges(inst)
			for k, e := range after {
				// 64 tokens: at least 64 objects each way (a decode step
				// down, its token back), each with a hop time.
				if e.State == "connected" && e.Objects >= before[k].Objects+64 && e.Bytes > before[k].Bytes && e.P50Ms > 0 && e.P99Ms >= e.P50Ms {
					moved++
				}
			}
		}
		if moved == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("edges after a chat of 64 tokens: %+v (before %+v)", after, before)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, e := range after {
		t.Logf("edge %d (rank %d → %d): %d objects, %d bytes, hop p50 %.3f ms, p99 %.3f ms", e.Link, e.FromRank, e.ToRank, e.Objects, e.Bytes, e.P50Ms, e.P99Ms)
	}
}

// chatContent posts a chat completion and returns its text.
func chatContent(n *clusterNode, body map[string]any) (string, int, []byte) {
	code, b := n.do("POST", "/v1/chat/completions", body)
	var resp struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(b, &resp) != nil || len(resp.Choices) != 1 {
		return "", code, b
	}
	return resp.Choices[0].Message.Content, code, b
}
