package node_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunnerStall stops a runner (SIGSTOP) mid-stream: the stream ends
// with an error event naming the stall within 5 s, the runner is killed and
// restarted (a restart the crash breaker counts), the node's diagnostics
// show why, and the next request is served.
func TestRunnerStall(t *testing.T) {
	n := startNode(t, t.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")
	pid := n.cmd.Process.Pid
	var stopped time.Time
	res, err := n.stream(context.Background(), storyRequest(true, 1500), stopRunnerAt(t, pid, 3, &stopped))
	took := time.Since(stopped)
	if err != nil {
		t.Fatal(err)
	}
	if res.done || !strings.Contains(res.errMsg, "stalled") {
		t.Fatalf("the stream of a stopped runner ended with %+v, want an error event naming the stall", res)
	}
	if took > 5*time.Second {
		t.Errorf("the error event came %v after the stop, want within 5s", took)
	}
	t.Logf("error event %v after SIGSTOP: %s", took, res.errMsg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := n.nodeReport()
		if len(r.Runners) == 1 && r.Runners[0].Ready && r.Runners[0].Restarts == 1 && len(runnerPIDs(pid)) == 1 {
			stall := false
			for _, p := range r.Runners[0].Phases {
				stall = stall || strings.Contains(p.Detail, "stalled")
			}
			if !stall {
				t.Fatalf("the flight recorder does not name the stall: %s", r.phases())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runner did not come back after the stall: %+v", r.Runners)
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.waitStatus(inst, "ready")
	if code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 64)); code != 200 || !strings.Contains(string(b), "Lily") {
		t.Fatalf("chat after the restart: %d %s", code, b)
	}
}

// stopRunnerAt returns a stream callback that stops (SIGSTOP) the one
// runner process of the node with pid when chunk at arrives, and notes
// when in stopped.
func stopRunnerAt(t *testing.T, pid, at int, stopped *time.Time) func(int, string) {
	return func(chunks int, _ string) {
		if chunks != at {
			return
		}
		pids := runnerPIDs(pid)
		if len(pids) != 1 {
			t.Errorf("want one runner process on the node, found %v", pids)
			return
		}
		syscall.Kill(pids[0], syscall.SIGSTOP)
		*stopped = time.Now()
	}
}
