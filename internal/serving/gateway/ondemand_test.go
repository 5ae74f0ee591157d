package gateway

import (
	"slices"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
)

// TestIdle: the node of an on-demand instance's first rank unloads it once
// idle for its keep-alive (the latest request's, else the instance's); an
// instance in use, kept forever, explicit, just loaded or run by another
// node stays.
func TestIdle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sec := func(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }
	tests := []struct {
		name     string
		explicit bool
		ka       int64 // the instance's keep-alive, ms
		first    ids.NodeID
		u        *use // nil: never seen
		want     bool
	}{
		{name: "idle_past_keep_alive", ka: 1000, u: &use{last: t0.Add(-2 * time.Second)}, want: true},
		{name: "idle_within_keep_alive", ka: 5000, u: &use{last: t0.Add(-2 * time.Second)}},
		{name: "request_keep_alive_wins", ka: 5000, u: &use{last: t0.Add(-2 * time.Second), keepAlive: sec(1)}, want: true},
		{name: "zero_right_after", u: &use{last: t0}, want: true},
		{name: "negative_never", ka: -1, u: &use{last: t0.Add(-time.Hour)}},
		{name: "in_use", ka: 0, u: &use{inflight: 1, last: t0.Add(-time.Hour)}},
		{name: "just_loaded_waits_for_its_requests", ka: 0},
		{name: "explicit_never", explicit: true, u: &use{last: t0.Add(-time.Hour)}},
		{name: "another_nodes", first: "other", u: &use{last: t0.Add(-time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(Config{Node: "self", Now: func() time.Time { return t0 }})
			first := tt.first
			if first == "" {
				first = "self"
			}
			st := state.State{Instances: map[ids.InstanceID]state.Instance{"i": {Model: "m", Status: state.InstanceReady,
				Placement: []event.Shard{{Node: first}}, OnDemand: !tt.explicit, KeepAliveMs: tt.ka}}}
			if tt.u != nil {
				g.uses["i"] = tt.u
			}
			got := slices.Contains(g.idle(st), "i")
			if got != tt.want {
				t.Fatalf("unloaded %v, want %v", got, tt.want)
			}
		})
	}
}
