package placement

import (
	"fmt"
	"slices"
	"testing"
)

func TestWiden(t *testing.T) {
	m := llama()
	// Two 8 GiB nodes hold the model between them; a third joins a wider
	// placement; "solo" can hold it alone.
	two := []Node{cpu("a", 8*GiB), cpu("b", 8*GiB)}
	three := slices.Concat(two, []Node{cpu("c", 8*GiB)})
	prev, err := Plan(m, two, Request{Excluded: []string{"x"}})
	if err != nil || layout(prev) != "a[0,17)e b[17,32)h" {
		t.Fatalf("setup: %s %v", layout(prev), err)
	}

	tests := []struct {
		name         string
		nodes        []Node
		refusing     string
		hops         int
		wantLayout   string
		wantExcluded string
		wantMin      int
		check        func(*testing.T, error)
	}{
		{
			// b is out; a, c and d make three.
			name: "one_node_wider_without_the_refuser", nodes: slices.Concat(three, []Node{cpu("d", 8*GiB)}), refusing: "b",
			wantLayout: "a[0,11)e c[11,22) d[22,32)h", wantExcluded: "[b x]", wantMin: 3,
		},
		{
			// Only a and solo remain: no three-node placement exists.
			name: "no_wider_falls_back_to_one_node", nodes: slices.Concat(two, []Node{cpu("solo", 16*GiB)}), refusing: "b", hops: 1,
			wantLayout: "solo[0,32)eh", wantExcluded: "[b x]", wantMin: 1,
		},
		{
			name: "nothing_fits_returns_the_wider_refusal", nodes: three, refusing: "a",
			check: func(t *testing.T, err error) {
				e := asRefusal[*TopologyGapError](t, err)
				if e.MinNodes != 3 {
					t.Errorf("refusal %v is not the wider attempt's", e)
				}
			},
		},
		{
			name: "third_refusal_gives_up", nodes: three, refusing: "b", hops: MaxRefusalHops,
			check: func(t *testing.T, err error) {
				if e := asRefusal[*RefusalLimitError](t, err); e.Hops != 2 || e.Refusing != "b" || Status(err) != 503 {
					t.Errorf("give-up = %+v", e)
				}
			},
		},
		{name: "stale_refusal", nodes: three, refusing: "c", check: invalid("refusing_node")},
		{name: "negative_hops", nodes: three, refusing: "b", hops: -1, check: invalid("hops")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Widen(m, tt.nodes, prev, tt.refusing, tt.hops)
			if tt.check != nil {
				if err == nil {
					t.Fatalf("Widen succeeded with %s, want a refusal", layout(p))
				}
				tt.check(t, err)
				return
			}
			if err != nil {
				t.Fatalf("Widen: %v", err)
			}
			checkInvariants(t, m, tt.nodes, p.Request, p)
			if layout(p) != tt.wantLayout || fmt.Sprint(p.Request.Excluded) != tt.wantExcluded || p.Request.MinNodes != tt.wantMin {
				t.Errorf("got %s excluding %v min %d, want %s excluding %s min %d",
					layout(p), p.Request.Excluded, p.Request.MinNodes, tt.wantLayout, tt.wantExcluded, tt.wantMin)
			}
		})
	}
}

// The refusal chain ends after two re-placements, whatever the cluster.
func TestWidenChainIsBounded(t *testing.T) {
	m := llama()
	nodes := []Node{cpu("a", 8*GiB), cpu("b", 8*GiB), cpu("c", 8*GiB), cpu("d", 8*GiB), cpu("e", 8*GiB), cpu("f", 8*GiB)}
	p, err := Plan(m, nodes, Request{})
	if err != nil {
		t.Fatal(err)
	}
	hops := 0
	for ; hops < 10; hops++ {
		next, err := Widen(m, nodes, p, p.Ranks[len(p.Ranks)-1].Node, hops)
		if err != nil {
			asRefusal[*RefusalLimitError](t, err)
			break
		}
		if len(next.Ranks) <= len(p.Ranks) {
			t.Errorf("hop %d: %s is not wider than %s", hops, layout(next), layout(p))
		}
		p = next
	}
	if hops != MaxRefusalHops {
		t.Errorf("chain gave up after %d hops, want %d", hops, MaxRefusalHops)
	}
}
