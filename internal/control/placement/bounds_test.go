package placement

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// charged is the commitment the fixtures give each runner already placed:
// CommittedBytes is an input here, so it is a round figure (what a whole
// llama runner cost when the runner overhead was 512 MiB), not RunnerNeed.
const charged = 12198 * MiB

// placedOn returns a node with total and free memory and k whole llama
// runners already placed on it.
func placedOn(id string, total, free int64, k int) Node {
	return Node{ID: id, TotalBytes: total, AvailableBytes: free, Backends: []string{"native-cpu"},
		Runners: k, CommittedBytes: int64(k) * charged}
}

func TestCharge(t *testing.T) {
	tied := llama()
	tied.TiedEmbedding = true
	tests := []struct {
		name   string
		model  Model
		rank   Rank
		window int
		want   int64
	}{
		{"whole_model", llama(), Rank{Start: 0, End: 32, HoldsEmbedding: true, HoldsHead: true}, DefaultContext, need(6900*MiB, 4096, 32, DefaultContext)},
		{"first_rank", llama(), Rank{Start: 0, End: 16, HoldsEmbedding: true}, AdmissionFloor, need(3450*MiB, 4096, 16, AdmissionFloor)},
		{"middle_rank", llama(), Rank{Start: 10, End: 20}, 1000, need(2000*MiB, 4096, 10, 1000)},
		{"tied_last_rank_holds_the_embedding_too", tied, Rank{Start: 16, End: 32, HoldsEmbedding: true, HoldsHead: true}, AdmissionFloor, need(3700*MiB, 4096, 16, AdmissionFloor)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Charge(tt.model, tt.rank, tt.window)
			if err != nil || got != tt.want {
				t.Errorf("Charge = %d, %v; want %d", got, err, tt.want)
			}
		})
	}

	bad := llama()
	bad.Layers = 0
	for name, call := range map[string]func() (int64, error){
		"past_the_last_layer": func() (int64, error) { return Charge(llama(), Rank{Start: 30, End: 33}, 1) },
		"empty_range":         func() (int64, error) { return Charge(llama(), Rank{Start: 4, End: 4}, 1) },
		"negative_window":     func() (int64, error) { return Charge(llama(), Rank{Start: 0, End: 1}, -1) },
		"invalid_card":        func() (int64, error) { return Charge(bad, Rank{Start: 0, End: 1}, 1) },
	} {
		if _, err := call(); Status(err) != 400 {
			t.Errorf("%s: %v, want a 400 refusal", name, err)
		}
	}
}

// Admission charges the runners the State already places on a node against
// its total memory, so telemetry that has not seen them allocate cannot
// admit one too many.
func TestCommittedMemory(t *testing.T) {
	tests := []struct {
		name       string
		nodes      []Node
		wantLayout string // "" when the placement must be refused
		check      func(t *testing.T, p Placement, err error)
	}{
		{
			// 64 GiB − 4 × 12198 MiB = 16744 MiB left, below the 60 GiB free.
			name:       "four_runners_leave_room_for_a_fifth",
			nodes:      []Node{placedOn("a", 64*GiB, 60*GiB, 4)},
			wantLayout: "a[0,32)eh",
			check: func(t *testing.T, p Placement, err error) {
				e := p.PerNode[0]
				if e.Available != 16744*MiB || e.Reported != 60*GiB || e.Memory != 64*GiB || e.Committed != 4*charged || e.Runners != 4 {
					t.Errorf("estimate %+v, want 16744 MiB available of 64 GiB with 4 runners committed", e)
				}
			},
		},
		{
			// 64 GiB − 5 × 12198 MiB = 4546 MiB, though telemetry says 60 GiB.
			name:  "the_sixth_is_a_shortfall_with_the_arithmetic",
			nodes: []Node{placedOn("a", 64*GiB, 60*GiB, 5)},
			check: func(t *testing.T, p Placement, err error) {
				e := asRefusal[*MemoryShortfallError](t, err)
				if n := e.Nodes[0]; n.Available != 4546*MiB || n.Committed != 5*charged || n.Runners != 5 {
					t.Errorf("estimate %+v, want 4546 MiB available with 5 runners committed", n)
				}
				for _, part := range []string{"has 4.44 GiB available", "60.00 GiB reported free", "64.00 GiB total − 59.56 GiB committed by 5 placed runners", "skulk stop INSTANCE"} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("message %q lacks %q", err, part)
					}
				}
			},
		},
		{
			// Memory used outside Skulk still counts: the free reading binds.
			name:  "a_lower_free_reading_binds",
			nodes: []Node{placedOn("a", 64*GiB, 8*GiB, 1)},
			check: func(t *testing.T, p Placement, err error) {
				if n := asRefusal[*MemoryShortfallError](t, err).Nodes[0]; n.Available != 8*GiB {
					t.Errorf("available %d, want the 8 GiB free reading", n.Available)
				}
			},
		},
		{
			// a reports the most free memory but most of it is committed.
			name:       "commitments_move_the_placement",
			nodes:      []Node{placedOn("a", 64*GiB, 60*GiB, 4), cpu("b", 20*GiB)},
			wantLayout: "b[0,32)eh",
		},
		{
			// 20 GiB free − 12198 MiB = 8282 MiB, below the 9126 MiB the floor needs.
			name:  "without_a_total_runners_are_charged_against_the_free_reading",
			nodes: []Node{placedOn("a", 0, 20*GiB, 1)},
			check: func(t *testing.T, p Placement, err error) {
				if n := asRefusal[*MemoryShortfallError](t, err).Nodes[0]; n.Available != 8282*MiB {
					t.Errorf("available %d, want 8282 MiB", n.Available)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Plan(llama(), tt.nodes, Request{})
			if tt.wantLayout != "" {
				if err != nil {
					t.Fatalf("Plan: %v", err)
				}
				checkInvariants(t, llama(), tt.nodes, Request{}, p)
				if got := layout(p); got != tt.wantLayout {
					t.Errorf("layout = %s, want %s", got, tt.wantLayout)
				}
			} else if err == nil {
				t.Fatalf("placed %s, want a refusal", layout(p))
			}
			if tt.check != nil {
				tt.check(t, p, err)
			}
		})
	}
}

func TestInstanceLimits(t *testing.T) {
	full := func(id string, runners, limit int) Node {
		n := cpu(id, 64*GiB)
		n.Runners, n.MaxInstances = runners, limit
		return n
	}
	limitOf := func(t *testing.T, err error) *NodeInstanceLimitError {
		t.Helper()
		e := asRefusal[*NodeInstanceLimitError](t, err)
		for _, part := range []string{"--max-instances", "SKULK_MAX_INSTANCES", "skulk stop INSTANCE"} {
			if !strings.Contains(e.Error(), part) {
				t.Errorf("message %q lacks %q", e, part)
			}
		}
		return e
	}
	tests := []struct {
		name       string
		nodes      []Node
		wantLayout string // "" when the placement must be refused
		wantStatus int
		check      func(t *testing.T, err error)
	}{
		{
			name: "default_limit_reached", nodes: []Node{full("a", 16, 0)}, wantStatus: 409,
			check: func(t *testing.T, err error) {
				e := limitOf(t, err)
				if !reflect.DeepEqual(e.Nodes, []NodeLimit{{Node: "a", Runners: 16, Limit: 16}}) || e.Cause != nil {
					t.Errorf("refusal %+v, want node a at 16 of 16 and no cause", e)
				}
				if !strings.Contains(e.Error(), "node a holds 16 runners of its limit 16") {
					t.Errorf("message %q does not name the limit", e)
				}
			},
		},
		{
			name: "the_nodes_own_limit_reached", nodes: []Node{full("a", 3, 3)}, wantStatus: 409,
			check: func(t *testing.T, err error) {
				if e := limitOf(t, err); e.Nodes[0].Limit != 3 {
					t.Errorf("limit %d, want the node's own 3", e.Nodes[0].Limit)
				}
			},
		},
		{name: "below_the_nodes_own_limit", nodes: []Node{full("a", 2, 3)}, wantLayout: "a[0,32)eh"},
		{name: "the_nodes_own_limit_above_the_default", nodes: []Node{full("a", 16, 32)}, wantLayout: "a[0,32)eh"},
		{name: "a_full_node_is_passed_over", nodes: []Node{full("a", 16, 0), cpu("b", 16*GiB)}, wantLayout: "b[0,32)eh"},
		{
			name: "a_full_node_and_no_room_elsewhere", nodes: []Node{full("a", 16, 0), cpu("b", 4*GiB)}, wantStatus: 409,
			check: func(t *testing.T, err error) {
				if e := limitOf(t, err); !strings.Contains(e.Error(), "(on the other nodes: placement: model \"llama\" (native-cpu) does not fit") {
					t.Errorf("message %q does not say why b could not take it", e)
				}
				asRefusal[*MemoryShortfallError](t, err)
			},
		},
		{
			name: "a_full_node_while_another_is_pending", nodes: []Node{full("a", 16, 0), {ID: "p", Pending: true}}, wantStatus: 503,
			check: func(t *testing.T, err error) {
				asRefusal[*InfoPendingError](t, err)
				limitOf(t, err)
			},
		},
		{
			name: "a_full_node_that_cannot_run_the_model_is_not_blamed", wantStatus: 503,
			nodes: []Node{{ID: "mac", AvailableBytes: 64 * GiB, Backends: []string{"mlx"}, Runners: 16}, cpu("b", 4*GiB)},
			check: func(t *testing.T, err error) {
				if _, ok := errors.AsType[*NodeInstanceLimitError](err); ok {
					t.Errorf("blamed a node that cannot run the model: %v", err)
				}
				asRefusal[*MemoryShortfallError](t, err)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Plan(llama(), tt.nodes, Request{})
			if tt.wantLayout != "" {
				if err != nil {
					t.Fatalf("Plan: %v", err)
				}
				checkInvariants(t, llama(), tt.nodes, Request{}, p)
				if got := layout(p); got != tt.wantLayout {
					t.Errorf("layout = %s, want %s", got, tt.wantLayout)
				}
				return
			}
			if err == nil {
				t.Fatalf("placed %s, want a refusal", layout(p))
			}
			if got := Status(err); got != tt.wantStatus {
				t.Errorf("status %d, want %d (%v)", got, tt.wantStatus, err)
			}
			tt.check(t, err)
		})
	}
}

func TestAdmitModel(t *testing.T) {
	tests := []struct {
		instances, limit int
		wantLimit        int // 0 when admitted
	}{
		{0, 0, 0},
		{15, 0, 0},
		{16, 0, DefaultMaxInstancesPerModel},
		{60, 0, DefaultMaxInstancesPerModel},
		{2, 3, 0},
		{3, 3, 3},
		{16, 32, 0},
	}
	for _, tt := range tests {
		err := AdmitModel("stories260k", tt.instances, tt.limit)
		if tt.wantLimit == 0 {
			if err != nil {
				t.Errorf("AdmitModel(%d, %d) = %v, want admitted", tt.instances, tt.limit, err)
			}
			continue
		}
		e := asRefusal[*ModelInstanceLimitError](t, err)
		if e.Limit != tt.wantLimit || e.Instances != tt.instances || Status(err) != 409 {
			t.Errorf("AdmitModel(%d, %d) = %+v status %d, want limit %d, 409", tt.instances, tt.limit, e, Status(err), tt.wantLimit)
		}
		for _, part := range []string{`model "stories260k" already has`, "--max-instances-per-model", "SKULK_MAX_INSTANCES_PER_MODEL", "skulk stop INSTANCE"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("message %q lacks %q", err, part)
			}
		}
	}
}

// Previews see what Plan sees: commitments and limits included.
func TestPreviewsCountPlacedRunners(t *testing.T) {
	atLimit := cpu("a", 64*GiB)
	atLimit.Runners = 16
	tests := []struct {
		name       string
		nodes      []Node
		wantWidths []int
		wantRanks  string // the width-1 preview's layout, when there is one
	}{
		{"room_for_one_more", []Node{placedOn("a", 64*GiB, 60*GiB, 4)}, []int{1}, "a[0,32)eh"},
		{"committed_memory_leaves_no_width", []Node{placedOn("a", 64*GiB, 60*GiB, 5)}, nil, ""},
		{"a_full_node_is_left_out", []Node{atLimit, cpu("b", 16*GiB)}, []int{1}, "b[0,32)eh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			previews, err := Previews(llama(), tt.nodes)
			if err != nil {
				t.Fatal(err)
			}
			var widths []int
			for _, pv := range previews {
				widths = append(widths, pv.Width)
				p, err := Plan(llama(), tt.nodes, Request{MinNodes: pv.Width})
				if err != nil || !reflect.DeepEqual(p.PerNode, pv.PerNode) {
					t.Errorf("width %d: preview %+v, plan %+v %v", pv.Width, pv.PerNode, p.PerNode, err)
				}
				if pv.Width == 1 && layout(Placement{Ranks: pv.Ranks}) != tt.wantRanks {
					t.Errorf("width 1 previews %s, want %s", layout(Placement{Ranks: pv.Ranks}), tt.wantRanks)
				}
			}
			if !reflect.DeepEqual(widths, tt.wantWidths) {
				t.Errorf("widths = %v, want %v", widths, tt.wantWidths)
			}
		})
	}
}
