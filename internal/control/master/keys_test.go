package master

import (
	"reflect"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
)

// TestDecideKeys: run-time keys are added and removed through the master;
// names taken by run-time or configured keys, removals of configured keys
// and changes that would lock clients out of the admin routes are refused
// with what to do.
func TestDecideKeys(t *testing.T) {
	key := func(name, scope, digest string) event.APIKey {
		return event.APIKey{Name: name, Scope: scope, Digest: strings.Repeat(digest, 64)}
	}
	added := func(k event.APIKey) event.APIKeyAdded {
		return event.APIKeyAdded{Key: k, Node: nodeB, AtUnixMs: decideNowMs}
	}
	ops, ci := key("ops", event.ScopeAdmin, "a"), key("ci", event.ScopeInference, "c")
	none := cluster(t)
	withOps := replay(t, none, added(ops))
	withBoth := replay(t, withOps, added(ci))
	envAdmin := replay(t, none, event.APIKeysSet{Node: node, Keys: []event.APIKey{key("admin", event.ScopeAdmin, "e")}})
	envAlice := replay(t, withOps, event.APIKeysSet{Node: nodeB, Keys: []event.APIKey{key("alice", event.ScopeInference, "f")}})
	tests := []struct {
		name      string
		s         state.State
		cmd       event.Command
		want      []event.Event
		wantClass fault.Class
		wantMsg   string // in the refusal
	}{
		{name: "first_admin_key", s: none, cmd: event.AddAPIKey{ID: "k", Key: ops, Node: nodeB}, want: []event.Event{added(ops)}},
		{name: "inference_key_beside_an_admin_key", s: withOps, cmd: event.AddAPIKey{ID: "k", Key: ci, Node: nodeB}, want: []event.Event{added(ci)}},
		{name: "inference_key_beside_a_configured_admin_key", s: envAdmin, cmd: event.AddAPIKey{ID: "k", Key: ci, Node: nodeB}, want: []event.Event{added(ci)}},
		{name: "the_same_key_again_is_a_no_op", s: withOps, cmd: event.AddAPIKey{ID: "k", Key: ops, Node: node}},
		{name: "a_taken_name", s: withOps, cmd: event.AddAPIKey{ID: "k", Key: key("ops", event.ScopeAdmin, "b"), Node: nodeB},
			wantClass: fault.ClassConflict, wantMsg: "skulk keys rm ops"},
		{name: "a_configured_name", s: envAlice, cmd: event.AddAPIKey{ID: "k", Key: key("alice", event.ScopeInference, "b"), Node: nodeB},
			wantClass: fault.ClassConflict, wantMsg: "SKULK_INFERENCE_KEYS on node " + string(nodeB)},
		{name: "the_reserved_name", s: none, cmd: event.AddAPIKey{ID: "k", Key: key("admin", event.ScopeAdmin, "b"), Node: nodeB},
			wantClass: fault.ClassInvalid, wantMsg: "reserved"},
		{name: "an_inference_key_alone", s: none, cmd: event.AddAPIKey{ID: "k", Key: ci, Node: nodeB},
			wantClass: fault.ClassConflict, wantMsg: "add an admin key first"},
		{name: "remove", s: withBoth, cmd: event.RemoveAPIKey{ID: "r", Name: "ci"}, want: []event.Event{event.APIKeyRemoved{Name: "ci"}}},
		{name: "remove_the_only_key", s: withOps, cmd: event.RemoveAPIKey{ID: "r", Name: "ops"}, want: []event.Event{event.APIKeyRemoved{Name: "ops"}}},
		{name: "remove_unknown", s: withOps, cmd: event.RemoveAPIKey{ID: "r", Name: "nope"}, wantClass: fault.ClassNotFound, wantMsg: "skulk keys list"},
		{name: "remove_a_configured_key", s: envAlice, cmd: event.RemoveAPIKey{ID: "r", Name: "alice"},
			wantClass: fault.ClassConflict, wantMsg: "remove it from SKULK_INFERENCE_KEYS there and restart that node"},
		{name: "remove_the_configured_admin_key", s: envAdmin, cmd: event.RemoveAPIKey{ID: "r", Name: "admin"},
			wantClass: fault.ClassConflict, wantMsg: "configured with SKULK_API_KEY on node " + string(node)},
		{name: "remove_the_last_admin_key_beside_others", s: withBoth, cmd: event.RemoveAPIKey{ID: "r", Name: "ops"},
			wantClass: fault.ClassConflict, wantMsg: "last admin key"},
		{name: "remove_an_admin_key_beside_a_configured_one", s: replay(t, envAdmin, added(ops), added(ci)), cmd: event.RemoveAPIKey{ID: "r", Name: "ops"},
			want: []event.Event{event.APIKeyRemoved{Name: "ops"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := decide(tt.s, tt.cmd, inputs{master: node, nowMs: decideNowMs, card: cards(t)})
			if tt.wantClass != "" {
				if fault.ClassOf(err) != tt.wantClass || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("decided %+v, %v (class %s); want class %s saying %q", evs, err, fault.ClassOf(err), tt.wantClass, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !reflect.DeepEqual(evs, tt.want) {
				t.Fatalf("decided %+v, want %+v", evs, tt.want)
			}
			replay(t, tt.s, evs...) // what the master decides applies
		})
	}
}
