package access

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// KeyPrefix starts every key a node generates, so that a key found in a
// file or a log is recognisable as a Skulk key.
const KeyPrefix = "sk-skulk-"

// keyBytes is the randomness of a generated key: 256 bits.
const keyBytes = 32

// Key sources, as GET /v1/keys names them.
const (
	SourceAdded     = "added"                // skulk keys add, at run time
	SourceAdminEnv  = "SKULK_API_KEY"        // a node's environment
	SourceInference = "SKULK_INFERENCE_KEYS" // a node's environment
)

// KeysConfig wires Keys to its node.
type KeysConfig struct {
	Self   ids.NodeID
	Hasher Hasher
	// State reads the State this node applied.
	State func(context.Context) (state.State, error)
	// Execute sends a command to the master and returns its events once
	// they are committed.
	Execute func(context.Context, event.Command) ([]event.IndexedEvent, error)
	// NewID mints command ids.
	NewID func() string
	// Changed is called once this node applied a change of the keys, so
	// that its policy follows at once (Live.Refresh); may be nil.
	Changed func()
}

// Keys manages the cluster's run-time keys (the /v1/keys routes): it
// generates a key, sends only its digest to the master, and hands the key
// to the caller once. It holds no state of its own.
type Keys struct{ cfg KeysConfig }

// NewKeys returns the key management of a node.
func NewKeys(cfg KeysConfig) *Keys { return &Keys{cfg: cfg} }

// AddedKey is the answer to adding a key: the only place the key is ever
// shown.
type AddedKey struct {
	Name    string     `json:"name"`
	Scope   string     `json:"scope"`
	Key     string     `json:"key"`
	Node    ids.NodeID `json:"node"`
	AddedAt string     `json:"added_at,omitempty"` // RFC 3339, UTC
}

// KeyInfo is one key of GET /v1/keys: never the key nor its digest.
type KeyInfo struct {
	Name  string `json:"name"`
	Scope string `json:"scope"`
	// Source is SourceAdded for a key added at run time, else the
	// variable that configured it on Nodes.
	Source string `json:"source"`
	// Nodes: for an added key, the node whose API generated it; for a
	// configured key, the nodes whose environment sets it.
	Nodes   []ids.NodeID `json:"nodes"`
	AddedAt string       `json:"added_at,omitempty"` // RFC 3339, UTC; added keys only
}

// KeyList is the answer of GET /v1/keys.
type KeyList struct {
	Keys []KeyInfo `json:"keys"`
}

// RemovedKey is the answer of DELETE /v1/keys/{name}.
type RemovedKey struct {
	Name    string `json:"name"`
	Removed bool   `json:"removed"`
}

// NewSecret returns a fresh key: KeyPrefix and 256 random bits in
// unpadded base64url.
func NewSecret() (string, error) {
	b := make([]byte, keyBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("access: generating a key: %w", err)
	}
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// AddKey generates a key of scope named name, has the master add its
// digest to the State and returns the key.
func (k *Keys) AddKey(ctx context.Context, name, scope string) (any, error) {
	if err := event.ValidateKeyName(name); err != nil {
		return nil, fault.ParamErrorf("name", "%v", err)
	}
	if scope != event.ScopeAdmin && scope != event.ScopeInference {
		return nil, fault.ParamErrorf("scope", "scope is %s or %s, got %s", event.ScopeAdmin, event.ScopeInference, fault.Quote(scope))
	}
	secret, err := NewSecret()
	if err != nil {
		return nil, err
	}
	evs, err := k.cfg.Execute(ctx, event.AddAPIKey{ID: ids.CommandID(k.cfg.NewID()),
		Key: event.APIKey{Name: name, Scope: scope, Digest: k.cfg.Hasher.Digest(secret)}, Node: k.cfg.Self})
	if err != nil {
		return nil, err
	}
	out := AddedKey{Name: name, Scope: scope, Key: secret, Node: k.cfg.Self}
	for _, ie := range evs {
		if e, ok := ie.Event.(event.APIKeyAdded); ok {
			out.AddedAt = formatMs(e.AtUnixMs)
		}
	}
	k.applied(ctx, evs)
	return out, nil
}

// RemoveKey has the master remove the run-time key name.
func (k *Keys) RemoveKey(ctx context.Context, name string) (any, error) {
	if err := event.ValidateKeyName(name); err != nil {
		return nil, fault.ParamErrorf("name", "%v", err)
	}
	evs, err := k.cfg.Execute(ctx, event.RemoveAPIKey{ID: ids.CommandID(k.cfg.NewID()), Name: name})
	if err != nil {
		return nil, err
	}
	k.applied(ctx, evs)
	return RemovedKey{Name: name, Removed: true}, nil
}

// ListKeys lists the keys in force.
func (k *Keys) ListKeys(ctx context.Context) (any, error) {
	st, err := k.cfg.State(ctx)
	if err != nil {
		return nil, err
	}
	return KeyList{Keys: ListOf(st)}, nil
}

// applied waits (briefly) until this node applied evs, then tells its
// policy, so that the node that answered enforces the change first.
func (k *Keys) applied(ctx context.Context, evs []event.IndexedEvent) {
	if len(evs) == 0 || k.cfg.Changed == nil {
		return
	}
	last := evs[len(evs)-1].Index
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for {
		if st, err := k.cfg.State(ctx); err == nil && st.LastIndex >= last {
			break
		}
		select {
		case <-ctx.Done():
			k.cfg.Changed()
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	k.cfg.Changed()
}

// ListOf lists the keys State s holds: run-time keys by name, and each
// configured key once with the nodes that configure it. Sorted by name,
// then source.
func ListOf(s state.State) []KeyInfo {
	out := []KeyInfo{}
	for name, k := range s.AddedKeys {
		out = append(out, KeyInfo{Name: name, Scope: k.Scope, Source: SourceAdded, Nodes: []ids.NodeID{k.Node}, AddedAt: formatMs(k.AtUnixMs)})
	}
	// A key configured on several nodes (the same digest) is one key.
	byDigest := map[string]int{}
	nodes := make([]ids.NodeID, 0, len(s.APIKeys))
	for n := range s.APIKeys {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		for _, k := range s.APIKeys[n] {
			if i, ok := byDigest[k.Digest+"\x00"+k.Name]; ok {
				out[i].Nodes = append(out[i].Nodes, n)
				continue
			}
			src := SourceInference
			if k.Scope == event.ScopeAdmin {
				src = SourceAdminEnv
			}
			byDigest[k.Digest+"\x00"+k.Name] = len(out)
			out = append(out, KeyInfo{Name: k.Name, Scope: k.Scope, Source: src, Nodes: []ids.NodeID{n}})
		}
	}
	slices.SortStableFunc(out, func(a, b KeyInfo) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Source, b.Source), slices.Compare(a.Nodes, b.Nodes))
	})
	return out
}

func formatMs(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}
