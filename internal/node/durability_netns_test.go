//go:build linux

package node_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

// TestNetnsDamagedLog is the damaged-log story on three real hosts: the
// master's raft log gets a flipped byte in its middle while the whole
// cluster is down, and the damaged node is the first to start again. Alone,
// one voter of three, it serves what it kept, decides nothing (no_quorum)
// and reports its loss in its health. When the two others come back, their
// whole logs win the election (raft never elects a node whose log is
// behind a majority's), the damaged node follows, the leader sends it what
// it lost, and every node ends with the cluster's full history, the same
// state hash and a clean health.
func TestNetnsDamagedLog(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace cluster test")
	}
	c := netns.New(t, netns.Options{Hosts: 3})
	boot := []string{"--no-mdns", "--bootstrap-peers", c.Host(1).Addr() + ":52416"}
	nodes := []*netNode{startNet(t, c, c.Host(1), []string{"--no-mdns"})}
	for _, h := range c.Hosts()[1:] {
		nodes = append(nodes, startNet(t, c, h, boot))
	}
	master, _ := netConverge(t, nodes, 3, 60*time.Second)
	for i := range 40 {
		if code, b := nodes[i%3].do("POST", "/tracing", map[string]bool{"enabled": i%2 == 0}); code != 200 {
			t.Fatalf("tracing: %d %s", code, b)
		}
	}
	_, hash := netConverge(t, nodes, 3, 30*time.Second)
	s, _ := nodes[0].state()
	full := s.lastIndex()
	t.Logf("the cluster's history: %d events, state hash %s, master %s", full, hash, master)

	for _, n := range nodes {
		n.proc.Stop()
	}
	victim, others := byID(nodes, master)
	live := filepath.Join(victim.home, "raft", "events.bin")
	b, err := os.ReadFile(live)
	if err != nil {
		t.Fatal(err)
	}
	ends := records(t, b)
	mid := ends[len(ends)/2]
	b[mid+20] ^= 0x01 // a payload byte of a record in the middle
	if err := os.WriteFile(live, b, 0o644); err != nil {
		t.Fatal(err)
	}
	kept := uint64(len(ends) / 2) // records before the damaged one

	victim.start()
	// Alone, one voter of three decides nothing: its shortened history
	// cannot be made the cluster's.
	if code, b := victim.do("POST", "/tracing", map[string]bool{"enabled": true}); code != 503 || !strings.Contains(string(b), "no_quorum") {
		t.Fatalf("the damaged node, alone, answered a change: %d %s", code, b)
	}
	waitHealth(t, victim, func(h map[string]nodeHealth) bool {
		return slices.Contains(h[victim.id()].Reasons, "history_lost")
	}, "the damaged node's health to report its lost history")
	if s, _ := victim.state(); s.lastIndex() >= full {
		t.Fatalf("the damaged node kept %d events of %d", s.lastIndex(), full)
	}
	t.Logf("the damaged node, alone, kept the %d records before the damage and decides nothing", kept)

	for _, n := range others {
		n.start()
	}
	master2, hash2 := netConverge(t, nodes, 3, 90*time.Second)
	if master2 == victim.id() {
		t.Fatalf("the damaged node's shortened history won the election over the whole ones")
	}
	for _, n := range nodes {
		if s, _ := n.state(); s.lastIndex() < full {
			t.Fatalf("%s ends at index %d, before the cluster's %d: history was rolled back", n.host.Name(), s.lastIndex(), full)
		}
	}
	waitHealth(t, others[0], func(h map[string]nodeHealth) bool {
		return len(h) == 3 && h[victim.id()].Healthy
	}, "the damaged node healthy once it took the history back")
	if _, err := victim.proc.WaitLog(`taken back from the leader`, 10*time.Second); err != nil {
		t.Fatalf("the damaged node never said it took the history back: %v", err)
	}
	t.Logf("master %s in a higher term; every node holds the full history, state hash %s", master2, hash2)
}
