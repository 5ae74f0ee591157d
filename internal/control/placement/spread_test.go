package placement

import (
	"fmt"
	"testing"
)

// TestReplicasSpread: twelve placements of one model on twelve equal
// nodes land on twelve different nodes, whatever each node's free-memory
// reading (noise of a few MiB here), as the master places them one by one
// and charges each.
func TestReplicasSpread(t *testing.T) {
	m := llama()
	var nodes []Node
	for i := range 12 {
		n := cpu(fmt.Sprintf("n%02d", i), 64*GiB+int64(i%3)*MiB) // n02, n05, … read the most
		n.Cores = 2
		nodes = append(nodes, n)
	}
	var running []Running
	seen := map[string]bool{}
	for k := range 12 {
		p, err := Plan(m, Charged(nodes, running), Request{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Ranks) != 1 {
			t.Fatalf("placement %d: %s, want one node", k, layout(p))
		}
		r := p.Ranks[0]
		if seen[r.Node] {
			t.Fatalf("placement %d went to %s again, with nodes left that hold no replica (%v)", k, r.Node, seen)
		}
		seen[r.Node] = true
		running = append(running, Running{Node: r.Node, ModelID: m.ID, Model: &m, Rank: r, Context: p.ContextWindow})
	}
}

// TestSpreadOrder: a whole instance goes to the node with the fewest
// replicas of its model, then the fewest runners per core, then the most
// room; a node it does not fit is passed over for the next.
func TestSpreadOrder(t *testing.T) {
	m := llama()
	node := func(id string, room int64, cores, runners int, replicas int) Node {
		n := cpu(id, room)
		n.Cores, n.Runners = cores, runners
		if replicas > 0 {
			n.Models = map[string]int{m.ID: replicas}
		}
		return n
	}
	for _, c := range []struct {
		name  string
		nodes []Node
		want  string
	}{
		{"fewest replicas of the model", []Node{node("a", 64*GiB, 8, 1, 1), node("b", 16*GiB, 2, 3, 0)}, "b"},
		{"fewest runners per core", []Node{node("a", 64*GiB, 2, 2, 0), node("b", 16*GiB, 8, 2, 0)}, "b"},
		{"then the roomiest", []Node{node("a", 16*GiB, 4, 1, 0), node("b", 32*GiB, 4, 1, 0)}, "b"},
		{"unknown cores count as one", []Node{node("a", 64*GiB, 0, 1, 0), node("b", 16*GiB, 4, 3, 0)}, "b"},
		{"a node it does not fit is passed over", []Node{node("a", 2*GiB, 8, 0, 0), node("b", 32*GiB, 2, 4, 0)}, "b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Plan(m, c.nodes, Request{})
			if err != nil {
				t.Fatal(err)
			}
			if got := layout(p); got != c.want+"[0,32)eh" {
				t.Fatalf("placed %s, want on %s", got, c.want)
			}
		})
	}
}
