package access

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

func TestParseKeys(t *testing.T) {
	for _, tc := range []struct {
		name, admin, inference string
		want                   []Key
		err                    string
	}{
		{name: "none"},
		{name: "admin only", admin: "admin-secret-1", want: []Key{{"admin", event.ScopeAdmin, "admin-secret-1"}}},
		{name: "named and bare inference keys", inference: "alice=alice-secret, bob-secret-2 ,",
			want: []Key{{"alice", event.ScopeInference, "alice-secret"}, {"inference-2", event.ScopeInference, "bob-secret-2"}}},
		{name: "short admin", admin: "short", err: "SKULK_API_KEY has 5 bytes"},
		{name: "short inference", inference: "alice=abc", err: "entry 1 (alice) has a key of 3 bytes"},
		{name: "duplicate name", inference: "a=12345678,a=87654321", err: `names "a" twice`},
		{name: "reserved name", inference: "admin=12345678", err: `names "admin" twice`},
		{name: "empty name", inference: "=12345678", err: "entry 1 needs a name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseKeys(tc.admin, tc.inference)
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrBadKeys) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "12345678") || strings.Contains(err.Error(), "abc") {
					t.Fatalf("the error quotes a key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("key %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestKeyStringRedacts(t *testing.T) {
	k := Key{Name: "alice", Scope: event.ScopeInference, Secret: "do-not-print"}
	if s := k.String(); strings.Contains(s, "do-not-print") {
		t.Fatal(s)
	}
}

func TestDigestIsKeyedByTheClusterSecret(t *testing.T) {
	a, b := NewHasher([32]byte{1}), NewHasher([32]byte{2})
	if a.Digest("k") == b.Digest("k") {
		t.Fatal("two clusters give the same digest for one key")
	}
	if a.Digest("k") != a.Digest("k") || a.Digest("k") == a.Digest("l") {
		t.Fatal("digest is not a function of the key")
	}
	if len(a.Digest("k")) != 64 {
		t.Fatal("digest is not 32 bytes of hex")
	}
	if err := (event.APIKeysSet{Node: "n", Keys: a.Entries([]Key{{"x", event.ScopeAdmin, "secret-123"}})}).Validate(); err != nil {
		t.Fatalf("entries do not validate as an event: %v", err)
	}
}

func TestDecide(t *testing.T) {
	h := NewHasher([32]byte{7})
	own := []Key{{"admin", event.ScopeAdmin, "admin-key-1"}}
	// A member's inference key, known only by its digest.
	cluster := map[ids.NodeID][]event.APIKey{"other": h.Entries([]Key{{"alice", event.ScopeInference, "alice-key-1"}})}
	keyed := Policy{Ring: NewRing(h, own, cluster)}
	clusterOnly := Policy{Ring: NewRing(h, nil, cluster)}
	none := Policy{Ring: NewRing(h, nil, nil)}
	open := Policy{Ring: NewRing(h, nil, nil), Open: true}
	openKeyed := Policy{Ring: NewRing(h, own, nil), Open: true}
	for _, tc := range []struct {
		name   string
		p      Policy
		r      Request
		status int    // 0: admitted
		who    string // the key that admitted it
	}{
		{"loopback, no keys", none, Request{Loopback: true, Admin: true}, 0, ""},
		{"remote, no keys", none, Request{}, http.StatusForbidden, ""},
		{"remote, no keys, open", open, Request{Admin: true}, 0, ""},
		{"remote, keys and open: the keys win", openKeyed, Request{}, http.StatusUnauthorized, ""},
		{"loopback with keys needs one", keyed, Request{Loopback: true}, http.StatusUnauthorized, ""},
		{"wrong key", keyed, Request{Credentials: []string{"nope"}}, http.StatusUnauthorized, ""},
		{"admin key on admin route", keyed, Request{Credentials: []string{"admin-key-1"}, Admin: true}, 0, "admin"},
		{"member's inference key", keyed, Request{Credentials: []string{"alice-key-1"}}, 0, "alice"},
		{"member's inference key through a keyless node", clusterOnly, Request{Credentials: []string{"alice-key-1"}}, 0, "alice"},
		{"inference key on admin route", keyed, Request{Credentials: []string{"alice-key-1"}, Admin: true, Route: "POST /place_instance"}, http.StatusForbidden, "alice"},
		{"second credential matches", keyed, Request{Credentials: []string{"", "nope", "admin-key-1"}, Admin: true}, 0, "admin"},
		{"empty credentials are none", keyed, Request{Credentials: []string{"", ""}}, http.StatusUnauthorized, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			who, denied := tc.p.Decide(tc.r)
			status := 0
			if denied != nil {
				status = denied.Status
				if denied.Reason == "" {
					t.Fatal("a refusal without a reason")
				}
			}
			if status != tc.status || who != tc.who {
				t.Fatalf("got %d %q (%v), want %d %q", status, who, denied, tc.status, tc.who)
			}
		})
	}
}

func TestRingKeepsTheWiderScope(t *testing.T) {
	h := NewHasher([32]byte{3})
	same := "shared-key-1"
	r := NewRing(h, []Key{{"mine", event.ScopeInference, same}},
		map[ids.NodeID][]event.APIKey{"b": h.Entries([]Key{{"theirs", event.ScopeAdmin, same}})})
	if k, ok := r.Lookup(same); !ok || k.Scope != event.ScopeAdmin || r.Len() != 1 {
		t.Fatalf("got %+v %v len %d", k, ok, r.Len())
	}
}
