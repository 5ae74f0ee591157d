package placement

import (
	"math"
	"testing"
)

func TestFitsNow(t *testing.T) {
	e := Estimate{Node: "a", Total: 11 * GiB}
	tests := []struct {
		name      string
		available int64
		wantFit   bool
	}{
		{"plenty", 16 * GiB, true},
		{"exactly_enough", 11 * GiB, true},
		// 10 GiB + 10% is 11 GiB: a 1 GiB miss is within tolerance.
		{"short_by_the_tolerance", 10 * GiB, true},
		{"short_by_one_byte_more", 10*GiB - 10, false},
		{"lost_half", 6 * GiB, false},
		{"nothing", 0, false},
		{"negative_reading", -GiB, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := FitsNow(e, tt.available)
			if tt.wantFit {
				if err != nil {
					t.Fatalf("FitsNow: %v", err)
				}
				return
			}
			f := asRefusal[*FitError](t, err)
			if f.Node != "a" || f.Need != e.Total || f.AvailableNow != tt.available || f.Tolerance != max(tt.available, 0)/10 {
				t.Errorf("refusal = %+v", f)
			}
		})
	}
}

// With a tied head the last rank holds the embedding as well, and a single
// node holds it once.
func TestTiedEmbeddingIsCharged(t *testing.T) {
	m := llama()
	m.TiedEmbedding = true
	m.HeadBytes = 1 * MiB // just the output norm
	tests := []struct {
		name        string
		nodes       []Node
		wantWeights []int64
	}{
		{"one_node_holds_it_once", []Node{cpu("a", 16*GiB)}, []int64{6400*MiB + 250*MiB + 1*MiB}},
		{"both_ends_hold_it", []Node{cpu("a", 8*GiB), cpu("b", 8*GiB)}, []int64{17*200*MiB + 250*MiB, 15*200*MiB + 250*MiB + 1*MiB}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Plan(m, tt.nodes, Request{MinNodes: len(tt.nodes)})
			if err != nil {
				t.Fatal(err)
			}
			for r, want := range tt.wantWeights {
				if p.PerNode[r].Weights != want {
					t.Errorf("rank %d (%s) weights %d, want %d", r, layout(p), p.PerNode[r].Weights, want)
				}
			}
		})
	}
}

func TestSaturatingArithmetic(t *testing.T) {
	tests := []struct {
		name      string
		got, want int64
	}{
		{"add", addSat(2, 3), 5},
		{"add_saturates", addSat(math.MaxInt64-1, 2), math.MaxInt64},
		{"mul", mulSat(6, 7), 42},
		{"mul_by_zero", mulSat(0, math.MaxInt64), 0},
		{"mul_saturates", mulSat(1<<32, 1<<32), math.MaxInt64},
		{"percent", percentOf(1000, 10), 100},
		{"percent_of_max_does_not_overflow", percentOf(math.MaxInt64, 10), math.MaxInt64 / 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %d, want %d", tt.got, tt.want)
			}
		})
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{512, "512 B"},
		{1536, "1.5 KiB"},
		{690 * MiB, "690.0 MiB"},
		{9126 * MiB, "8.91 GiB"},
	}
	for _, tt := range tests {
		if got := formatBytes(tt.n); got != tt.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
