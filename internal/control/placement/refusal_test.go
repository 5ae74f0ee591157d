package placement

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestPlanRefusals(t *testing.T) {
	gguf := llama()
	gguf.CompatibleBackends = []string{"llama-server-cuda", "native-cpu"}
	mac := Node{ID: "mac", AvailableBytes: 64 * GiB, Backends: []string{"mlx"}}

	tests := []struct {
		name       string
		model      Model
		nodes      []Node
		req        Request
		wantStatus int
		check      func(t *testing.T, err error)
	}{
		{
			name: "no_nodes", model: llama(), wantStatus: 503,
			check: func(t *testing.T, err error) { asRefusal[*TopologyGapError](t, err) },
		},
		{
			name: "fewer_nodes_than_min_nodes", model: llama(),
			nodes: []Node{cpu("a", 64*GiB), cpu("b", 64*GiB)}, req: Request{MinNodes: 3}, wantStatus: 503,
			check: func(t *testing.T, err error) {
				e := asRefusal[*TopologyGapError](t, err)
				if e.MinNodes != 3 || e.Candidates != 2 {
					t.Errorf("gap = %+v, want min 3 candidates 2", e)
				}
			},
		},
		{
			name: "every_node_excluded", model: llama(),
			nodes: []Node{cpu("a", 64*GiB), cpu("b", 64*GiB)}, req: Request{Excluded: []string{"b", "a", "b"}}, wantStatus: 400,
			check: func(t *testing.T, err error) {
				e := asRefusal[*AllCandidatesExcludedError](t, err)
				if fmt.Sprint(e.Excluded) != "[a b]" {
					t.Errorf("excluded = %v, want [a b]", e.Excluded)
				}
			},
		},
		{
			name: "no_node_offers_a_compatible_backend", model: gguf,
			nodes: []Node{mac}, wantStatus: 503,
			check: func(t *testing.T, err error) {
				e := asRefusal[*NoCompatibleBackendError](t, err)
				if fmt.Sprint(e.Offered) != "[mlx]" || !strings.Contains(e.Error(), "llama-server-cuda, native-cpu") {
					t.Errorf("refusal %q does not name what the card allows and what nodes offer", e)
				}
			},
		},
		{
			name: "pending_node_might_fit", model: llama(),
			nodes: []Node{cpu("a", 4*GiB), {ID: "b", Pending: true}}, wantStatus: 503,
			check: func(t *testing.T, err error) {
				e := asRefusal[*InfoPendingError](t, err)
				if fmt.Sprint(e.Nodes) != "[b]" {
					t.Errorf("pending = %v, want [b]", e.Nodes)
				}
				asRefusal[*MemoryShortfallError](t, err) // the cause stays reachable
			},
		},
		{
			name: "pending_node_that_cannot_run_the_model_is_not_waited_for", model: llama(),
			nodes: []Node{cpu("a", 4*GiB), {ID: "mac", Backends: []string{"mlx"}, Pending: true}}, wantStatus: 503,
			check: func(t *testing.T, err error) {
				if _, ok := errors.AsType[*InfoPendingError](err); ok {
					t.Errorf("waiting on a node that cannot run the model: %v", err)
				}
				asRefusal[*MemoryShortfallError](t, err)
			},
		},
		{
			name: "only_a_pending_node_that_cannot_run_the_model", model: llama(),
			nodes: []Node{{ID: "mac", Backends: []string{"mlx"}, Pending: true}}, wantStatus: 503,
			check: func(t *testing.T, err error) { asRefusal[*NoCompatibleBackendError](t, err) },
		},
		{
			name: "only_pending_nodes", model: llama(),
			nodes: []Node{{ID: "a", Pending: true}}, wantStatus: 503,
			check: func(t *testing.T, err error) {
				asRefusal[*InfoPendingError](t, err)
				asRefusal[*NoCompatibleBackendError](t, err)
			},
		},
		{
			// 6900 MiB of weights + 690 overhead + 32 runner overhead + 1 GiB
			// of KV at the 8192-token floor = 8646 MiB against 4 GiB.
			name: "shortfall_carries_the_arithmetic", model: llama(),
			nodes: []Node{cpu("a", 4*GiB)}, wantStatus: 503,
			check: func(t *testing.T, err error) {
				e := asRefusal[*MemoryShortfallError](t, err)
				want := Estimate{Node: "a", Weights: 6900 * MiB, Overhead: 690 * MiB, Floor: RunnerOverheadBytes, KV: 1024 * MiB, Total: 8646 * MiB,
					Available: 4 * GiB, Reported: 4 * GiB, Memory: 8 * GiB}
				if len(e.Nodes) != 1 || e.Nodes[0] != want || e.Window != AdmissionFloor {
					t.Fatalf("shortfall = %+v, want one node %+v at the floor", e, want)
				}
				for _, part := range []string{"node a needs 8.44 GiB", "weights 6.74 GiB", "overhead 690.0 MiB", "floor 32.0 MiB", "KV 1.00 GiB for 8192 tokens", "has 4.00 GiB available"} {
					if !strings.Contains(e.Error(), part) {
						t.Errorf("message %q lacks %q", e.Error(), part)
					}
				}
			},
		},
		{
			name: "shortfall_reports_the_widest_attempt", model: llama(),
			nodes: []Node{cpu("a", 3*GiB), cpu("b", 2*GiB), cpu("c", 2*GiB)}, wantStatus: 503,
			check: func(t *testing.T, err error) {
				e := asRefusal[*MemoryShortfallError](t, err)
				if len(e.Nodes) != 3 || len(e.Short()) == 0 || e.Ceiling != 0 {
					t.Errorf("shortfall over %d nodes with %d short and ceiling %d, want all 3 nodes, some short, ceiling 0", len(e.Nodes), len(e.Short()), e.Ceiling)
				}
			},
		},
		{
			name: "requested_context_above_what_memory_allows", model: llama(),
			nodes: []Node{cpu("a", 14*GiB)}, req: Request{Context: 65536}, wantStatus: 503,
			check: func(t *testing.T, err error) {
				// Room after weights: 14336 − 7622 MiB = 6714 MiB over
				// 32 layers × 4 KiB a token: 53711 tokens.
				e := asRefusal[*MemoryShortfallError](t, err)
				if e.Requested != 65536 || e.Ceiling != 53711 {
					t.Errorf("requested %d ceiling %d, want 65536 and 53711", e.Requested, e.Ceiling)
				}
				if !strings.Contains(e.Error(), "request at most 53711 tokens") {
					t.Errorf("message %q does not name the ceiling", e)
				}
			},
		},
		{name: "context_above_the_card", model: llama(), nodes: []Node{cpu("a", 64*GiB)}, req: Request{Context: 131073}, wantStatus: 400, check: invalid("context_tokens")},
		{name: "context_below_the_floor", model: llama(), nodes: []Node{cpu("a", 64*GiB)}, req: Request{Context: 4096}, wantStatus: 400, check: invalid("context_tokens")},
		{name: "negative_context", model: llama(), nodes: []Node{cpu("a", 64*GiB)}, req: Request{Context: -1}, wantStatus: 400, check: invalid("context_tokens")},
		{name: "min_nodes_above_layers", model: llama(), nodes: []Node{cpu("a", 64*GiB)}, req: Request{MinNodes: 33}, wantStatus: 400, check: invalid("min_nodes")},
		{name: "negative_min_nodes", model: llama(), nodes: []Node{cpu("a", 64*GiB)}, req: Request{MinNodes: -1}, wantStatus: 400, check: invalid("min_nodes")},
		{name: "tensor_sharding", model: llama(), nodes: []Node{cpu("a", 64*GiB)}, req: Request{Sharding: "tensor"}, wantStatus: 400, check: invalid("sharding")},
		{name: "other_model", model: llama(), nodes: []Node{cpu("a", 64*GiB)}, req: Request{Model: "qwen"}, wantStatus: 400, check: invalid("model")},
		{name: "preferred_backend_not_on_the_card", model: llama(), nodes: []Node{cpu("a", 64*GiB)}, req: Request{PreferredBackend: "mlx"}, wantStatus: 400, check: invalid("backend")},
		{name: "duplicate_node", model: llama(), nodes: []Node{cpu("a", 64*GiB), cpu("a", 8*GiB)}, wantStatus: 400, check: invalid(`nodes["a"]`)},
		{name: "node_without_id", model: llama(), nodes: []Node{cpu("", 64*GiB)}, wantStatus: 400, check: invalid("nodes")},
		{name: "negative_reading", model: llama(), nodes: []Node{cpu("a", -1)}, wantStatus: 400, check: invalid(`nodes["a"]`)},
		{name: "negative_commitment", model: llama(), nodes: []Node{{ID: "a", AvailableBytes: GiB, CommittedBytes: -1}}, wantStatus: 400, check: invalid(`nodes["a"]`)},
		{name: "negative_runner_limit", model: llama(), nodes: []Node{{ID: "a", AvailableBytes: GiB, MaxInstances: -1}}, wantStatus: 400, check: invalid(`nodes["a"]`)},
		{name: "card_without_layers", model: with(func(m *Model) { m.Layers = 0 }), wantStatus: 400, check: invalid("model.layers")},
		{name: "card_with_too_many_layers", model: with(func(m *Model) { m.Layers = MaxLayers + 1 }), wantStatus: 400, check: invalid("model.layers")},
		{name: "card_layer_sizes_mismatch", model: with(func(m *Model) { m.LayerBytes = []int64{1, 2} }), wantStatus: 400, check: invalid("model.layer_bytes")},
		{name: "card_negative_layer", model: with(func(m *Model) { m.Layers, m.LayerBytes = 2, []int64{1, -2} }), wantStatus: 400, check: invalid("model.layer_bytes")},
		{name: "card_negative_head", model: with(func(m *Model) { m.HeadBytes = -1 }), wantStatus: 400, check: invalid("model.bytes")},
		{name: "card_without_context", model: with(func(m *Model) { m.ContextLength = 0 }), wantStatus: 400, check: invalid("model.context_length")},
		{name: "card_without_backends", model: with(func(m *Model) { m.CompatibleBackends = nil }), wantStatus: 400, check: invalid("model.compatible_backends")},
		{name: "card_without_id", model: with(func(m *Model) { m.ID = "" }), wantStatus: 400, check: invalid("model.id")},
		{
			name: "window_above_floor_without_kv_geometry", nodes: []Node{cpu("a", 64*GiB)}, req: Request{Context: 16384},
			model: with(func(m *Model) { m.KVBytesPerTokenLayer = 0 }), wantStatus: 400, check: invalid("context_tokens"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Plan(tt.model, tt.nodes, tt.req)
			if err == nil {
				t.Fatalf("Plan succeeded with %s, want a refusal", layout(p))
			}
			if got := Status(err); got != tt.wantStatus {
				t.Errorf("status = %d, want %d (%v)", got, tt.wantStatus, err)
			}
			if got := Status(fmt.Errorf("master: %w", err)); got != tt.wantStatus {
				t.Errorf("wrapped status = %d, want %d", got, tt.wantStatus)
			}
			if !strings.HasPrefix(err.Error(), "placement: ") {
				t.Errorf("message %q lacks the package prefix", err)
			}
			tt.check(t, err)
		})
	}
}

func invalid(field string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if e := asRefusal[*InvalidRequestError](t, err); e.Field != field {
			t.Errorf("invalid field %q, want %q (%v)", e.Field, field, e)
		}
	}
}

func with(edit func(*Model)) Model {
	m := llama()
	edit(&m)
	return m
}

// An exact fit thrashes instead of running, so need must be strictly below
// what the node has: one byte more is the difference.
func TestExactFitIsRefused(t *testing.T) {
	m := llama()
	m.ContextLength = AdmissionFloor // the window is the floor whatever memory allows
	exact := need(6900*MiB, m.KVBytesPerTokenLayer, 32, AdmissionFloor)
	tests := []struct {
		name      string
		available int64
		wantFit   bool
	}{
		{"one_byte_short", exact - 1, false},
		{"exact", exact, false},
		{"one_byte_spare", exact + 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Plan(m, []Node{cpu("a", tt.available)}, Request{})
			if tt.wantFit {
				if err != nil {
					t.Fatalf("Plan: %v", err)
				}
				if p.PerNode[0].Total != exact {
					t.Errorf("need = %d, want %d", p.PerNode[0].Total, exact)
				}
				return
			}
			e := asRefusal[*MemoryShortfallError](t, err)
			if e.Nodes[0].Total != exact || e.Nodes[0].Available != tt.available {
				t.Errorf("shortfall %+v, want need %d against %d", e.Nodes[0], exact, tt.available)
			}
		})
	}
}

func TestStatusOfForeignErrors(t *testing.T) {
	if got := Status(errors.New("disk on fire")); got != 500 {
		t.Errorf("Status(foreign) = %d, want 500", got)
	}
	refusals := []Refusal{&FitError{}, &RefusalLimitError{}}
	for _, r := range refusals {
		if r.HTTPStatus() != 503 || !strings.HasPrefix(r.Error(), "placement: ") {
			t.Errorf("%T: status %d message %q", r, r.HTTPStatus(), r)
		}
	}
}
