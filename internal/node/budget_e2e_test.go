package node_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestMemoryBudget: --memory-budget caps what placement counts on a node:
// its resources report the budget, and a second placement of the demo
// model that the machine could hold but the budget cannot is refused with
// the arithmetic.
func TestMemoryBudget(t *testing.T) {
	// One demo runner is charged about 34.5 MiB (its 32 MiB runner overhead,
	// 1.2 MB of weights with overhead, 1.3 MB of KV): one fits, two do not.
	const budget = 50 << 20
	n := startArgs(t, []string{"run", "--home", t.TempDir(), "--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0",
		"--quic-addr", "127.0.0.1:0", "--no-mdns", "--threads", "1", "--memory-budget", "50MiB"}, nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, b := n.do("GET", "/state", nil)
		var doc struct {
			NodeResources []struct {
				TotalBytes     int64 `json:"total_bytes"`
				AvailableBytes int64 `json:"available_bytes"`
			} `json:"nodeResources"`
		}
		json.Unmarshal(b, &doc)
		if len(doc.NodeResources) == 1 && doc.NodeResources[0].TotalBytes == budget {
			if doc.NodeResources[0].AvailableBytes > budget {
				t.Fatalf("available %d over the budget", doc.NodeResources[0].AvailableBytes)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node never reported its budget: %s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	n.waitStatus(n.place(), "ready")
	code, b := n.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"})
	if code != 503 || !strings.Contains(string(b), "committed by 1 placed runner") {
		t.Fatalf("a second placement over the budget: %d %s", code, b)
	}
}
