package node_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/platform/config"
)

// The config package restates the planner's defaults (it imports only the
// standard library); they must not drift apart.
func TestInstanceLimitDefaultsAgree(t *testing.T) {
	if config.DefaultMaxInstances != placement.DefaultMaxInstances || config.DefaultMaxInstancesPerModel != placement.DefaultMaxInstancesPerModel {
		t.Fatalf("config defaults %d, %d; placement defaults %d, %d", config.DefaultMaxInstances, config.DefaultMaxInstancesPerModel,
			placement.DefaultMaxInstances, placement.DefaultMaxInstancesPerModel)
	}
}

// TestPlacementBounds is the security review's repeated placement on a real
// node: with --max-instances 3 exactly three placements of the demo model
// are accepted, the rest are refused with a 409 that names the setting, and
// three runner processes run; deleting one makes room for one. Restarted
// with SKULK_MAX_INSTANCES_PER_MODEL=3 and room on the node, the model's
// own limit refuses the fourth.
func TestPlacementBounds(t *testing.T) {
	home := t.TempDir()
	args := func(maxInstances string) []string {
		return []string{"run", "--home", home, "--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0",
			"--quic-addr", "127.0.0.1:0", "--no-mdns", "--threads", "1", "--max-instances", maxInstances}
	}
	n := startArgs(t, args("3"), nil)

	// place answers a placement; a 503 right after start (the node's own
	// readings or the election still pending) is retried.
	place := func() (int, string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			code, b := n.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"})
			if code != 503 || time.Now().After(deadline) {
				return code, string(b)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	accept := func() string {
		t.Helper()
		code, b := place()
		var r struct {
			InstanceID string `json:"instance_id"`
		}
		if code != 200 || json.Unmarshal([]byte(b), &r) != nil || r.InstanceID == "" {
			t.Fatalf("placement refused: %d %s", code, b)
		}
		return r.InstanceID
	}
	refuse := func(setting string) {
		t.Helper()
		code, b := place()
		if code != 409 || !strings.Contains(b, setting) || !strings.Contains(b, "skulk stop INSTANCE") {
			t.Fatalf("placement beyond the limit: %d %s, want a 409 naming %s", code, b, setting)
		}
	}
	// runners waits until the node runs want runner processes.
	runners := func(want int) {
		t.Helper()
		var got int
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if got = len(runnerPIDs(n.cmd.Process.Pid)); got == want {
				return
			}
		}
		t.Fatalf("%d runner processes, want %d", got, want)
	}

	var insts []string
	for range 3 {
		insts = append(insts, accept())
	}
	for range 3 {
		refuse("--max-instances")
	}
	for _, id := range insts {
		n.waitStatus(id, "ready")
	}
	runners(3)
	if got := len(n.state().Instances); got != 3 {
		t.Fatalf("%d instances in the State, want 3", got)
	}

	if code, b := n.do("DELETE", "/instance/"+insts[0], nil); code != 200 {
		t.Fatalf("delete: %d %s", code, b)
	}
	n.waitStatus(insts[0], "gone")
	again := accept()
	refuse("--max-instances")
	n.waitStatus(again, "ready")
	runners(3)

	// The per-model limit is the master's; the three instances come back
	// with the State.
	n.stop()
	n = startArgs(t, args("8"), []string{"SKULK_MAX_INSTANCES_PER_MODEL=3"})
	refuse("--max-instances-per-model")
	for _, id := range append(insts[1:], again) {
		n.waitStatus(id, "ready")
	}
	runners(3)
}
