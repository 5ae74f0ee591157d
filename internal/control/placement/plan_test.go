package placement

import (
	"reflect"
	"testing"
)

func TestPlan(t *testing.T) {
	big := llama()
	big.ID, big.Layers, big.LayerBytes = "big", 80, []int64{400 * MiB}

	tests := []struct {
		name       string
		model      Model
		nodes      []Node
		req        Request
		wantLayout string
		wantWindow int
	}{
		{
			name:       "single_node_on_the_roomiest",
			model:      llama(),
			nodes:      []Node{cpu("a", 14*GiB), cpu("b", 64*GiB), cpu("c", 8*GiB)},
			wantLayout: "b[0,32)eh",
			wantWindow: DefaultContext,
		},
		{
			name:       "single_node_even_when_it_is_the_only_one_that_fits",
			model:      llama(),
			nodes:      []Node{cpu("a", 4*GiB), cpu("b", 13*GiB)},
			wantLayout: "b[0,32)eh",
			wantWindow: DefaultContext,
		},
		{
			// Split by work: b also reads the 250 MiB head every token, so
			// a takes a layer more (3400 MiB | 3000 + 250).
			name:       "two_equal_nodes_split_by_work",
			model:      llama(),
			nodes:      []Node{cpu("a", 8*GiB), cpu("b", 8*GiB)},
			wantLayout: "a[0,17)e b[17,32)h",
			wantWindow: DefaultContext,
		},
		{
			// b has 5357 MiB left for layers, c 4333 MiB: b's share of the
			// 6400 MiB of layers is 3538 MiB, nearest boundary 18 layers.
			// b's room after weights is 1397 MiB for 18 layers of 4 KiB a
			// token: 19868 tokens, the binding node.
			name:       "two_uneven_nodes_split_in_proportion_at_a_reduced_window",
			model:      llama(),
			nodes:      []Node{cpu("a", 4*GiB-shift), cpu("b", 6*GiB-shift), cpu("c", 5*GiB-shift)},
			wantLayout: "b[0,18)e c[18,32)h",
			wantWindow: 19868,
		},
		{
			name:       "min_nodes_forces_a_split",
			model:      llama(),
			nodes:      []Node{cpu("a", 64*GiB-shift), cpu("b", 32*GiB-shift), cpu("c", 16*GiB-shift)},
			req:        Request{MinNodes: 3},
			wantLayout: "a[0,19)e b[19,29) c[29,32)h",
			wantWindow: DefaultContext,
		},
		{
			name:       "excluded_roomiest_node_is_skipped",
			model:      llama(),
			nodes:      []Node{cpu("a", 64*GiB), cpu("b", 16*GiB)},
			req:        Request{Excluded: []string{"a", "not-a-node"}},
			wantLayout: "b[0,32)eh",
			wantWindow: DefaultContext,
		},
		{
			name:       "pending_node_is_not_waited_for_when_others_fit",
			model:      llama(),
			nodes:      []Node{cpu("a", 16*GiB), {ID: "b", AvailableBytes: 64 * GiB, Pending: true}},
			wantLayout: "a[0,32)eh",
			wantWindow: DefaultContext,
		},
		{
			name:  "tied_head_is_charged_the_embedding_on_the_last_rank",
			model: func() Model { m := llama(); m.TiedEmbedding = true; return m }(),
			nodes: []Node{cpu("a", 8*GiB), cpu("b", 8*GiB)},
			// b is also charged the 250 MiB embedding (its output matrix),
			// which it reads every token: a takes a layer more. Only rank 0
			// embeds tokens (the event's placement rule).
			wantLayout: "a[0,17)e b[17,32)h",
			wantWindow: DefaultContext,
		},
		{
			// Room for layers: a 7405, b 9728, c 13824, d 11501 MiB; the
			// boundaries land at 32000 MiB × 7405/42458 = 13.95 layers, and so
			// on. d binds the window: 1821 MiB of room over 22 layers × 4 KiB.
			// e (2 GiB) is not needed.
			name:       "four_heterogeneous_nodes",
			model:      big,
			nodes:      []Node{cpu("d", 12*GiB-shift), cpu("c", 14*GiB-shift), cpu("b", 10*GiB-shift), cpu("a", 8*GiB-shift), cpu("e", 2*GiB-shift)},
			wantLayout: "a[0,14)e b[14,32) c[32,58) d[58,80)h",
			wantWindow: 21189,
		},
		{
			name:       "five_heterogeneous_nodes",
			model:      big,
			nodes:      []Node{cpu("d", 10*GiB-shift), cpu("c", 9*GiB-shift), cpu("b", 8*GiB-shift), cpu("a", 6*GiB-shift), cpu("e", 9*GiB-shift)},
			wantLayout: "a[0,11)e b[11,26) c[26,44) d[44,63) e[63,80)h",
			wantWindow: 11150,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Plan(tt.model, tt.nodes, tt.req)
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			checkInvariants(t, tt.model, tt.nodes, tt.req, p)
			if got := layout(p); got != tt.wantLayout {
				t.Errorf("layout = %s, want %s", got, tt.wantLayout)
			}
			if p.ContextWindow != tt.wantWindow {
				t.Errorf("window = %d, want %d", p.ContextWindow, tt.wantWindow)
			}
			if p.Backend != "native-cpu" {
				t.Errorf("backend = %q", p.Backend)
			}
		})
	}
}

// The same nodes in any order give the same placement: the API's dry run
// and the master may list members differently.
func TestPlanIgnoresNodeOrder(t *testing.T) {
	m := llama()
	m.Layers, m.LayerBytes = 60, []int64{300 * MiB}
	// b, c and d tie for the two places beside a; e is excluded.
	nodes := []Node{cpu("a", 9*GiB), cpu("b", 8*GiB), cpu("c", 8*GiB), cpu("d", 8*GiB), cpu("e", 20*GiB)}
	req := Request{Excluded: []string{"e"}}
	want, err := Plan(m, nodes, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Ranks) < 3 {
		t.Fatalf("want a placement wide enough to exercise tie-breaks, got %s", layout(want))
	}
	count := 0
	permute(nodes, 0, func(order []Node) {
		count++
		got, err := Plan(m, order, req)
		if err != nil {
			t.Fatalf("order %v: %v", ids(order), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("order %v: %s window %d, want %s window %d", ids(order), layout(got), got.ContextWindow, layout(want), want.ContextWindow)
		}
	})
	if count != 120 {
		t.Fatalf("tried %d orders, want 120", count)
	}
}

func permute(nodes []Node, k int, visit func([]Node)) {
	if k == len(nodes) {
		visit(append([]Node(nil), nodes...))
		return
	}
	for i := k; i < len(nodes); i++ {
		nodes[k], nodes[i] = nodes[i], nodes[k]
		permute(nodes, k+1, visit)
		nodes[k], nodes[i] = nodes[i], nodes[k]
	}
}

func ids(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	return out
}
