package node_test

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRunnerRecordsKeepTheirLevel: at --log-level debug, the runner child's
// own records reach the node's log at their level with their attributes
// (not as text inside an Info line), and carry the runner's identity.
func TestRunnerRecordsKeepTheirLevel(t *testing.T) {
	n := startArgs(t, []string{"run", "--home", t.TempDir(), "--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0",
		"--quic-addr", "127.0.0.1:0", "--no-mdns", "--threads", "1", "--log-level", "debug"}, nil)
	inst := n.place()
	n.waitStatus(inst, "ready")
	code, b := n.do("POST", "/v1/completions", map[string]any{"model": "stories260k", "prompt": "Once upon a time", "temperature": 0, "max_tokens": 5})
	if code != 200 {
		t.Fatalf("completion: %d %s", code, b)
	}
	// The runner logs "task done" at debug after the final chunk, so it may
	// trail the HTTP answer a little.
	taskDone := regexp.MustCompile(`level=DEBUG msg="task done" .*runner=\S+.* stream=stderr task=\S+ finish=length prompt_tokens=\d+ completion_tokens=5 took=[0-9.]+[µm]?s\b`)
	deadline := time.Now().Add(10 * time.Second)
	for !taskDone.MatchString(n.logs.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no debug record of the runner's task in the node's log:\n%s", n.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for line := range strings.SplitSeq(n.logs.String(), "\n") {
		if strings.Contains(line, "stream=stderr") && strings.Contains(line, `{"time"`) {
			t.Fatalf("a runner record reached the log as raw JSON: %s", line)
		}
	}
}
