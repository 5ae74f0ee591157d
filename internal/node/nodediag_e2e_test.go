package node_test

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

type nodeReport struct {
	NodeID  string `json:"nodeId"`
	Version string `json:"version"`
	Role    string `json:"role"`
	Kernels string `json:"kernels"`
	Memory  struct {
		TotalBytes        int64 `json:"totalBytes"`
		NodeResidentBytes int64 `json:"nodeResidentBytes"`
	} `json:"memory"`
	Runners []struct {
		Instance      string `json:"instance"`
		Runner        string `json:"runner"`
		Pid           int    `json:"pid"`
		Restarts      int    `json:"restarts"`
		Ready         bool   `json:"ready"`
		ResidentBytes int64  `json:"residentBytes"`
		Phases        []struct {
			At     time.Time `json:"at"`
			Runner string    `json:"runner"`
			Phase  string    `json:"phase"`
			Detail string    `json:"detail"`
		} `json:"phases"`
	} `json:"runners"`
}

func (n *node) nodeReport() nodeReport {
	n.t.Helper()
	code, b := n.do("GET", "/v1/diagnostics/node", nil)
	if code != 200 {
		n.t.Fatalf("GET /v1/diagnostics/node: %d %s", code, b)
	}
	var r nodeReport
	if err := json.Unmarshal(b, &r); err != nil {
		n.t.Fatalf("node report %s: %v", b, err)
	}
	return r
}

// phases lists a report's runner phases, in order.
func (r nodeReport) phases() string {
	var out []string
	for _, p := range r.Runners[0].Phases {
		out = append(out, p.Phase)
	}
	return strings.Join(out, " ")
}

// TestNodeDiagnostics: GET /v1/diagnostics/node shows the node's facts and
// its runner's flight recorder (spawn, load, ready, the task); a runner
// killed behind the node's back is restarted, its recorder shows the exit,
// the node's log holds the recorder, and the restart is counted in
// /metrics.
func TestNodeDiagnostics(t *testing.T) {
	n := startNode(t, t.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")
	if code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 4)); code != 200 {
		t.Fatalf("chat: %d %s", code, b)
	}
	r := n.nodeReport()
	if r.NodeID == "" || r.Version == "" || r.Role != "master" || r.Kernels == "" || r.Kernels == "unknown" || r.Memory.TotalBytes <= 0 || r.Memory.NodeResidentBytes <= 0 {
		t.Fatalf("node facts %+v", r)
	}
	if len(r.Runners) != 1 || r.Runners[0].Instance != inst || r.Runners[0].Pid <= 0 || !r.Runners[0].Ready || r.Runners[0].ResidentBytes <= 0 {
		t.Fatalf("runners %+v", r.Runners)
	}
	if got := r.phases(); got != "spawn load ready task_start task_end" {
		t.Fatalf("phases %q, want spawn load ready task_start task_end", got)
	}

	// Kill the runner: the worker restarts it and its recorder tells.
	pid := r.Runners[0].Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for r = n.nodeReport(); !(len(r.Runners) == 1 && r.Runners[0].Ready && r.Runners[0].Restarts == 1 && r.Runners[0].Pid != pid &&
		strings.HasSuffix(r.phases(), "exit spawn load ready")); r = n.nodeReport() {
		if time.Now().After(deadline) {
			t.Fatalf("the killed runner was not restarted: %+v (phases %q)", r.Runners, r.phases())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(n.logs.String(), "flight_recorder=") || !strings.Contains(n.logs.String(), "task_start task") {
		t.Errorf("the crash left no flight recorder in the node's log:\n%s", n.logs)
	}
	if v, ok := n.scrapeMetrics().value("skulk_runner_restarts_total", map[string]string{"instance_id": inst, "rank": "0"}); !ok || v != 1 {
		t.Errorf("skulk_runner_restarts_total = %v (found %v), want 1", v, ok)
	}
}
