package access

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestNewSecret(t *testing.T) {
	a, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSecret()
	if a == b || !strings.HasPrefix(a, KeyPrefix) || len(a) != len(KeyPrefix)+43 {
		t.Fatalf("keys %q and %q: want distinct %s keys of 256 bits", a, b, KeyPrefix)
	}
	if _, err := ParseKeys(a, "x="+b); err != nil {
		t.Fatalf("a generated key is not a valid configured key: %v", err)
	}
}

// keysState is a State with a configured admin key on two nodes, a
// configured inference key and two run-time keys.
func keysState(h Hasher) state.State {
	admin := h.Entries([]Key{{"admin", event.ScopeAdmin, "configured-admin"}})
	return state.State{
		APIKeys: map[ids.NodeID][]event.APIKey{
			"node-a": admin,
			"node-b": append(h.Entries([]Key{{"alice", event.ScopeInference, "alice-key-1"}}), admin...),
		},
		AddedKeys: map[string]event.AddedAPIKey{
			"ops": {Scope: event.ScopeAdmin, Digest: h.Digest("ops-key-1"), Node: "node-c", AtUnixMs: 1700000000000},
			"ci":  {Scope: event.ScopeInference, Digest: h.Digest("ci-key-1"), Node: "node-a", AtUnixMs: 1700000060000},
		},
	}
}

// TestStateRing: a node enforces the configured and the run-time keys of
// the State, each with its scope.
func TestStateRing(t *testing.T) {
	h := NewHasher([32]byte{9})
	r := StateRing(h, nil, keysState(h))
	for _, tc := range []struct {
		key, name, scope string
	}{
		{"configured-admin", "admin", event.ScopeAdmin},
		{"alice-key-1", "alice", event.ScopeInference},
		{"ops-key-1", "ops", event.ScopeAdmin},
		{"ci-key-1", "ci", event.ScopeInference},
		{"nope-nope", "", ""},
	} {
		k, ok := r.Lookup(tc.key)
		if ok != (tc.name != "") || k.Name != tc.name || k.Scope != tc.scope {
			t.Errorf("%s: got %+v %v, want %s %s", tc.key, k, ok, tc.name, tc.scope)
		}
	}
	if r.Len() != 4 {
		t.Fatalf("%d keys, want 4", r.Len())
	}
}

// TestListOf pins GET /v1/keys: run-time keys with their node and time,
// each configured key once with its variable and nodes, no digests.
func TestListOf(t *testing.T) {
	h := NewHasher([32]byte{9})
	b, err := json.MarshalIndent(KeyList{Keys: ListOf(keysState(h))}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := string(b) + "\n"
	if strings.Contains(got, h.Digest("ops-key-1")) || strings.Contains(got, "digest") {
		t.Fatalf("the list shows a digest:\n%s", got)
	}
	path := filepath.Join("testdata", "keylist.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("the key list differs from %s (-update rewrites it):\n%s", path, got)
	}
	if l := ListOf(state.State{}); l == nil || len(l) != 0 {
		t.Fatalf("no keys: %#v, want an empty list", l)
	}
}

// TestLiveFollowsRunTimeKeys: Live enforces a key from the State it reads,
// and stops once the State drops it; Refresh does not wait for the tick.
func TestLiveFollowsRunTimeKeys(t *testing.T) {
	h := NewHasher([32]byte{5})
	var cur atomic.Pointer[state.State]
	cur.Store(&state.State{})
	read := func(context.Context) (state.State, error) { return *cur.Load(), nil }
	report := func(context.Context, event.Event) error { return nil }
	live := NewLive("node-a", nil, h, false, read, report, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { live.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	admitted := func() bool {
		_, denied := live.Policy().Decide(Request{Credentials: []string{"run-time-key-1"}, Admin: true})
		return denied == nil
	}
	wait := func(want bool) time.Duration {
		t.Helper()
		start := time.Now()
		live.Refresh()
		for admitted() != want {
			if time.Since(start) > 2*time.Second {
				t.Fatalf("the policy did not follow the State within 2 s (want admitted %v)", want)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	with := keysState(h)
	with.AddedKeys["rt"] = event.AddedAPIKey{Scope: event.ScopeAdmin, Digest: h.Digest("run-time-key-1"), Node: "node-a", AtUnixMs: 1}
	cur.Store(&with)
	t.Logf("added key in force after %v", wait(true))
	without := keysState(h)
	cur.Store(&without)
	t.Logf("removed key refused after %v", wait(false))
}
