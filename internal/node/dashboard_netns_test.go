//go:build linux

package node_test

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

// TestNetnsDashboard opens the dashboard of a three-node cluster from
// another host (the harness's client, where chromium runs in its network
// namespace): the nodes need the API key, so the page asks for it and
// refuses a wrong one; the topology shows the three nodes with one master,
// the links' latency and a model split across the nodes one band per rank,
// whose labels stay apart and whole at phone width (390 px); a node killed
// turns its card unreachable within 10 s, then lost (greyed, with the time
// it was lost) once the master removed it from the State, and live again
// when it is started again.
func TestNetnsDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace cluster test")
	}
	argv := browserTest(t, "cluster.mjs")
	c := netns.New(t, netns.Options{Hosts: 3})
	boot := []string{"--no-mdns", "--bootstrap-peers", c.Host(1).Addr() + ":52416"}
	nodes := []*netNode{startNet(t, c, c.Host(1), []string{"--no-mdns"})}
	for _, h := range c.Hosts()[1:] {
		nodes = append(nodes, startNet(t, c, h, boot))
	}
	master, _ := netConverge(t, nodes, 3, 60*time.Second)
	// stories260k split across the three nodes: the topology draws one
	// band per rank.
	if _, ranks := placeSplit(t, nodes[0], map[string]any{"min_nodes": 3}); len(ranks) != 3 {
		t.Fatalf("%d ranks, want 3", len(ranks))
	}
	// The victim is a follower other than the node the page is on.
	var victim *netNode
	for _, n := range nodes[1:] {
		if n.id() != master {
			victim = n
			break
		}
	}

	argv = append([]string{"ip", "netns", "exec", c.Client().Namespace()}, argv...)
	res := runScript(t, argv, []string{"SKULK_URL=" + nodes[0].url(""), "KEY=" + netAdminKey, "VICTIM=" + victim.id(),
		"SCREENSHOTS=" + absScreenshots(t)}, 5*time.Minute, func(line string, stdin io.Writer) {
		switch line {
		case "KILL":
			victim.proc.Kill()
			fmt.Fprintln(stdin, "KILLED")
		case "RESTART":
			victim.start()
			fmt.Fprintln(stdin, "RESTARTED")
		}
	})
	var ms int
	res.value(t, "UNREACHABLE_MS", &ms)
	if ms > 10000 {
		t.Fatalf("the killed node's card turned unreachable after %d ms, want within 10 s", ms)
	}
	t.Logf("the killed node's card turned unreachable %d ms after the kill", ms)
	var lost, back int
	res.value(t, "LOST_MS", &lost)
	res.value(t, "BACK_MS", &back)
	t.Logf("it showed lost %d ms after the kill, and live again %d ms after its restart", lost, back)
}
