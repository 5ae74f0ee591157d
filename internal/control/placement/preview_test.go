package placement

import (
	"reflect"
	"testing"
)

func TestPreviews(t *testing.T) {
	pending := Node{ID: "p", AvailableBytes: 128 * GiB, Backends: []string{"native-cpu"}, Pending: true}
	tests := []struct {
		name       string
		nodes      []Node
		wantWidths []int
	}{
		{"every_width_fits", []Node{cpu("a", 16*GiB), cpu("b", 8*GiB), cpu("c", 8*GiB), pending}, []int{1, 2, 3}},
		{"too_big_for_one", []Node{cpu("a", 8*GiB), cpu("b", 8*GiB)}, []int{2}},
		{"fits_nowhere", []Node{cpu("a", 2*GiB), cpu("b", 2*GiB)}, nil},
		{"no_nodes", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			previews, err := Previews(llama(), tt.nodes)
			if err != nil {
				t.Fatalf("Previews: %v", err)
			}
			var widths []int
			for _, pv := range previews {
				widths = append(widths, pv.Width)
				// A preview is exactly what Plan would place at that width.
				p, err := Plan(llama(), tt.nodes, Request{MinNodes: pv.Width})
				if err != nil {
					t.Fatalf("width %d previewed but Plan refuses: %v", pv.Width, err)
				}
				if len(p.Ranks) != pv.Width || !reflect.DeepEqual(p.Ranks, pv.Ranks) || !reflect.DeepEqual(p.PerNode, pv.PerNode) {
					t.Errorf("width %d: preview %v differs from plan %s", pv.Width, pv.Ranks, layout(p))
				}
				var sum int64
				for _, e := range pv.PerNode {
					sum += e.Total
				}
				if pv.MemoryBytes != sum || pv.DefaultContext != p.ContextWindow || pv.ContextCeiling != p.ContextCeiling {
					t.Errorf("width %d: memory %d (sum %d), default %d (plan %d), ceiling %d (plan %d)",
						pv.Width, pv.MemoryBytes, sum, pv.DefaultContext, p.ContextWindow, pv.ContextCeiling, p.ContextCeiling)
				}
				if pv.KVBytesPerToken != 32*4096 || pv.Backend != "native-cpu" {
					t.Errorf("width %d: %d KV bytes a token on %q", pv.Width, pv.KVBytesPerToken, pv.Backend)
				}
			}
			if !reflect.DeepEqual(widths, tt.wantWidths) {
				t.Errorf("widths = %v, want %v", widths, tt.wantWidths)
			}
		})
	}
}

func TestPreviewsRejectsAnInvalidCard(t *testing.T) {
	m := llama()
	m.Layers = 0
	if _, err := Previews(m, []Node{cpu("a", 16*GiB)}); Status(err) != 400 {
		t.Errorf("Previews(invalid card) = %v, want a 400 refusal", err)
	}
}
