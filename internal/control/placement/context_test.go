package placement

import (
	"strings"
	"testing"
)

// The llama fixture's fixed need on one node is 8102 MiB (6900 of weights,
// 690 overhead, 512 floor) and its KV costs 128 KiB a token, 8 tokens a MiB.
func TestContextWindow(t *testing.T) {
	noKV := llama()
	noKV.KVBytesPerTokenLayer = 0
	short := llama()
	short.ContextLength = 16384
	tiny := llama()
	tiny.ContextLength = 4096

	tests := []struct {
		name        string
		model       Model
		nodes       []Node
		req         Request
		wantWindow  int
		wantCeiling int
		wantLayout  string
	}{
		{"default_when_memory_allows_more", llama(), []Node{cpu("a", 64*GiB)}, Request{}, DefaultContext, 131072, "a[0,32)eh"},
		{"card_below_the_default", short, []Node{cpu("a", 64*GiB)}, Request{}, 16384, 16384, "a[0,32)eh"},
		// 3642 MiB of room (11264 − 7622 MiB of weights, overhead and runner) is
		// exactly 29136 tokens; strictly below means one fewer.
		{"memory_fit_between_floor_and_default", llama(), []Node{cpu("a", 11*GiB)}, Request{}, 29135, 29135, "a[0,32)eh"},
		{"explicit_above_the_default", llama(), []Node{cpu("a", 64*GiB)}, Request{Context: 65536}, 65536, 131072, "a[0,32)eh"},
		{"explicit_below_the_default", llama(), []Node{cpu("a", 64*GiB)}, Request{Context: 16384}, 16384, 131072, "a[0,32)eh"},
		{"explicit_at_the_card_maximum", llama(), []Node{cpu("a", 64*GiB)}, Request{Context: 131072}, 131072, 131072, "a[0,32)eh"},
		// One node holds at most 53711 tokens; two halves hold more than the card.
		{"explicit_window_placed_wider_to_fit", llama(), []Node{cpu("a", 14*GiB), cpu("b", 14*GiB)}, Request{Context: 65536}, 65536, 131072, "a[0,17)e b[17,32)h"},
		// Default request, narrowest placement wins even at a smaller window.
		{"default_prefers_one_node_at_a_smaller_window", llama(), []Node{cpu("a", 11*GiB), cpu("b", 11*GiB)}, Request{}, 29135, 29135, "a[0,32)eh"},
		// 600 MiB of room holds 4800 tokens: enough for the card's 4096.
		{"card_below_the_floor_uses_the_card", tiny, []Node{cpu("a", 7622*MiB+600*MiB)}, Request{}, 4096, 4096, "a[0,32)eh"},
		{"no_kv_geometry_clamps_to_the_floor", noKV, []Node{cpu("a", 64*GiB)}, Request{}, AdmissionFloor, AdmissionFloor, "a[0,32)eh"},
		{"no_kv_geometry_accepts_the_floor_explicitly", noKV, []Node{cpu("a", 64*GiB)}, Request{Context: AdmissionFloor}, AdmissionFloor, AdmissionFloor, "a[0,32)eh"},
		// b binds: 1397 MiB of room over 18 layers (see TestPlan).
		{"minimum_across_nodes", llama(), []Node{cpu("b", 6*GiB-shift), cpu("c", 5*GiB-shift)}, Request{}, 19868, 19868, "b[0,18)e c[18,32)h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Plan(tt.model, tt.nodes, tt.req)
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			checkInvariants(t, tt.model, tt.nodes, tt.req, p)
			if p.ContextWindow != tt.wantWindow || p.ContextCeiling != tt.wantCeiling {
				t.Errorf("window %d ceiling %d, want %d and %d", p.ContextWindow, p.ContextCeiling, tt.wantWindow, tt.wantCeiling)
			}
			if got := layout(p); got != tt.wantLayout {
				t.Errorf("layout = %s, want %s", got, tt.wantLayout)
			}
			if tt.req.Context == 0 && tt.model.KVBytesPerTokenLayer > 0 && p.ContextWindow < min(DefaultContext, tt.model.ContextLength) {
				checkWindowIsMaximal(t, tt.model, tt.nodes, p)
			}
		})
	}
}

// checkWindowIsMaximal asserts that one more token would not fit on some
// rank, by the arithmetic written out independently.
func checkWindowIsMaximal(t *testing.T, m Model, nodes []Node, p Placement) {
	t.Helper()
	avail := map[string]int64{}
	for _, n := range nodes {
		avail[n.ID] = n.AvailableBytes
	}
	for _, e := range p.PerNode {
		layers := int(e.KV / m.KVBytesPerTokenLayer / int64(p.ContextWindow))
		if need(e.Weights, m.KVBytesPerTokenLayer, layers, p.ContextWindow+1) >= avail[e.Node] {
			return
		}
	}
	t.Errorf("window %d is not the largest that fits: every node could hold one more token", p.ContextWindow)
}

func TestContextWindowRefusals(t *testing.T) {
	tests := []struct {
		name          string
		nodes         []Node
		req           Request
		wantWindow    int
		wantCeiling   int
		wantCeilingIn bool // whether the message offers the ceiling as the answer
	}{
		// 1000 MiB of room holds 8000 tokens, under the 8192 floor.
		{"ceiling_below_the_floor", []Node{cpu("a", 8622*MiB)}, Request{}, AdmissionFloor, 7999, false},
		{"explicit_above_the_ceiling", []Node{cpu("a", 11*GiB)}, Request{Context: 32768}, 32768, 29135, true},
		{"explicit_above_the_ceiling_below_the_floor", []Node{cpu("a", 8622*MiB)}, Request{Context: 16384}, 16384, 7999, false},
		{"weights_alone_do_not_fit", []Node{cpu("a", 7*GiB)}, Request{Context: 16384}, 16384, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Plan(llama(), tt.nodes, tt.req)
			e := asRefusal[*MemoryShortfallError](t, err)
			if e.Window != tt.wantWindow || e.Ceiling != tt.wantCeiling || e.MinWindow != AdmissionFloor {
				t.Errorf("window %d ceiling %d floor %d, want %d, %d, %d", e.Window, e.Ceiling, e.MinWindow, tt.wantWindow, tt.wantCeiling, AdmissionFloor)
			}
			if got := strings.Contains(e.Error(), "request at most"); got != tt.wantCeilingIn {
				t.Errorf("message %q offers the ceiling: %v, want %v", e, got, tt.wantCeilingIn)
			}
			if !tt.wantCeilingIn && len(e.Short()) == 0 {
				t.Errorf("no node reported short in %v", e)
			}
		})
	}
}
