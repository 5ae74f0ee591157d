package membership

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/transport/clusterkey"
	"github.com/skulk/skulk/internal/testkit"
)

// netnsEnv marks the child test process that runs inside the private
// network namespace.
const netnsEnv = "SKULK_MEMBERSHIP_IN_NETNS"

// TestMDNSDiscovery runs three nodes with no bootstrap peers that find each
// other through mDNS only. Multicast needs a real network, so the test
// re-executes itself under `unshare -n` with multicast enabled on the
// namespace's loopback.
func TestMDNSDiscovery(t *testing.T) {
	if os.Getenv(netnsEnv) == "1" {
		mdnsDiscovery(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: mDNS discovery needs a private network namespace, and `unshare -n` needs root")
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: %s not found: %v", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("skipping: unshare -n is not permitted here: %v: %s", err, out)
	}
	script := `ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo && exec "$0" -test.run '^TestMDNSDiscovery$' -test.v -test.count=1`
	cmd := exec.CommandContext(ctx, "unshare", "-n", "sh", "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("inside the namespace:\n%s", out)
	if err != nil {
		t.Fatalf("mDNS test in the namespace failed: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestMDNSDiscovery") {
		t.Fatal("the namespaced run did not pass TestMDNSDiscovery")
	}
}

func mdnsDiscovery(t *testing.T) {
	withMDNS := func(c *Config) {
		c.MDNS = true
		c.MDNSInterval = 200 * time.Millisecond
	}
	nodes := []*tnode{
		startNode(t, "node-a", withMDNS),
		startNode(t, "node-b", withMDNS),
		startNode(t, "node-c", withMDNS),
	}
	want := []ids.NodeID{"node-a", "node-b", "node-c"}
	for _, n := range nodes {
		testkit.Eventually(t, 20*time.Second, string(n.m.Self())+" to discover the others", func() bool {
			return slices.Equal(memberIDs(n.m), want)
		})
	}
	// Discovery does not bypass the key: an outsider advertises too, but
	// the fingerprints differ, so neither side knocks and both list the
	// other as discovered, not a member.
	var mu sync.Mutex
	foreign := map[string]bool{}
	onRefusal := func(who string) opt {
		return func(c *Config) {
			c.OnRefusal = func(addr, reason string) {
				if reason == ReasonForeignCluster {
					mu.Lock()
					foreign[who] = true
					mu.Unlock()
				}
			}
		}
	}
	x := startNode(t, "node-x", withMDNS, key("another-cluster", clusterkey.NetworkVersion), onRefusal("x"))
	testkit.Eventually(t, 20*time.Second, "x to find the cluster's nodes foreign", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return foreign["x"]
	})
	if lines := x.log.lines("could not be decrypted"); len(lines) > 0 {
		t.Fatalf("the outsider knocked although the fingerprints differ: %v", lines)
	}
	for _, n := range nodes {
		if slices.Contains(memberIDs(n.m), "node-x") {
			t.Fatalf("%s let the outsider in", n.m.Self())
		}
	}
}
