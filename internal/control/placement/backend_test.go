package placement

import (
	"fmt"
	"testing"
)

func TestBackends(t *testing.T) {
	card := llama()
	card.CompatibleBackends = []string{"native-cpu", "llama-server-cuda", "llama-server-vulkan"}
	card.BackendPreference = []string{"llama-server-cuda", "native-cpu"}
	on := func(id string, available int64, backends ...string) Node {
		return Node{ID: id, AvailableBytes: available, Backends: backends}
	}

	tests := []struct {
		name        string
		nodes       []Node
		req         Request
		wantBackend string
		wantLayout  string
	}{
		{
			name:        "preference_picks_the_gpu_node_over_a_roomier_cpu_node",
			nodes:       []Node{on("cpu", 64*GiB, "native-cpu"), on("gpu", 16*GiB, "llama-server-cuda")},
			wantBackend: "llama-server-cuda", wantLayout: "gpu[0,32)eh",
		},
		{
			name:        "node_offering_both_runs_the_preferred",
			nodes:       []Node{on("a", 16*GiB, "native-cpu", "llama-server-cuda")},
			wantBackend: "llama-server-cuda", wantLayout: "a[0,32)eh",
		},
		{
			name:        "preferred_backend_not_admissible_falls_back",
			nodes:       []Node{on("cpu", 64*GiB, "native-cpu"), on("gpu", 4*GiB, "llama-server-cuda")},
			wantBackend: "native-cpu", wantLayout: "cpu[0,32)eh",
		},
		{
			// One node on the less preferred backend beats two on the
			// preferred one: a single-node placement is always preferred.
			name:        "width_before_preference",
			nodes:       []Node{on("cpu", 64*GiB, "native-cpu"), on("g1", 8*GiB, "llama-server-cuda"), on("g2", 8*GiB, "llama-server-cuda")},
			wantBackend: "native-cpu", wantLayout: "cpu[0,32)eh",
		},
		{
			name:        "ranks_never_mix_backends",
			nodes:       []Node{on("cpu", 8*GiB, "native-cpu"), on("g1", 8*GiB, "llama-server-cuda"), on("g2", 8*GiB, "llama-server-cuda")},
			wantBackend: "llama-server-cuda", wantLayout: "g1[0,17)e g2[17,32)h",
		},
		{
			name:        "request_preference_goes_first",
			nodes:       []Node{on("cpu", 64*GiB, "native-cpu"), on("gpu", 16*GiB, "llama-server-cuda")},
			req:         Request{PreferredBackend: "native-cpu"},
			wantBackend: "native-cpu", wantLayout: "cpu[0,32)eh",
		},
		{
			name:        "incompatible_node_is_filtered_out",
			nodes:       []Node{on("mac", 128*GiB, "mlx"), on("cpu", 16*GiB, "native-cpu")},
			wantBackend: "native-cpu", wantLayout: "cpu[0,32)eh",
		},
		{
			// Backends outside the preference list follow it, by name.
			name:        "unlisted_compatible_backend_is_a_last_resort",
			nodes:       []Node{on("amd", 16*GiB, "llama-server-vulkan"), on("cpu", 4*GiB, "native-cpu")},
			wantBackend: "llama-server-vulkan", wantLayout: "amd[0,32)eh",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Plan(card, tt.nodes, tt.req)
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			checkInvariants(t, card, tt.nodes, tt.req, p)
			if p.Backend != tt.wantBackend || layout(p) != tt.wantLayout {
				t.Errorf("got %s on %s, want %s on %s", p.Backend, layout(p), tt.wantBackend, tt.wantLayout)
			}
		})
	}
}

func TestBackendOrder(t *testing.T) {
	s := shape{Model: Model{
		CompatibleBackends: []string{"c", "a", "b", "d"},
		BackendPreference:  []string{"b", "x", "b", "c"},
	}}
	tests := []struct {
		preferred string
		want      string
	}{
		{"", "[b c a d]"},
		{"d", "[d b c a]"},
		{"b", "[b c a d]"},
	}
	for _, tt := range tests {
		t.Run("preferred_"+tt.preferred, func(t *testing.T) {
			if got := backendOrder(s, tt.preferred); fmt.Sprint(got) != tt.want {
				t.Errorf("order = %v, want %s", got, tt.want)
			}
		})
	}
}
