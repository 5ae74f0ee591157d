package event

import (
	"encoding/hex"
	"fmt"

	"github.com/skulk/skulk/internal/platform/ids"
)

// KindAPIKeysSet is the event a node reports when its configured API keys
// differ from what the State holds for it.
const KindAPIKeysSet Kind = "APIKeysSet"

// MaxAPIKeys bounds the keys one node may configure.
const MaxAPIKeys = 64

// API key scopes.
const (
	ScopeAdmin     = "admin"     // every route
	ScopeInference = "inference" // inference and read-only routes
)

// APIKey is an API key as the cluster knows it: a name for logs, its scope
// and a keyed digest (HMAC-SHA256 under a secret derived from the cluster
// key, hex), never the key itself.
type APIKey struct {
	Name   string `json:"name"`
	Scope  string `json:"scope"`
	Digest string `json:"digest"`
}

// APIKeysSet replaces the API keys a node was configured with. The keys of
// every node are enforced by every node, so a member's API cannot be used
// to get around another member's key. An empty Keys clears the node's keys.
type APIKeysSet struct {
	Node ids.NodeID `json:"node"`
	Keys []APIKey   `json:"keys"`
}

func (APIKeysSet) Kind() Kind { return KindAPIKeysSet }
func (APIKeysSet) isEvent()   {}

func (e APIKeysSet) Validate() error {
	return firstInvalid(e.Kind(),
		check{"node", e.Node.Validate()},
		check{"keys", validateAPIKeys(e.Keys)},
	)
}

func validateAPIKeys(keys []APIKey) error {
	if len(keys) > MaxAPIKeys {
		return fmt.Errorf("%d keys, limit %d", len(keys), MaxAPIKeys)
	}
	for i, k := range keys {
		if len(k.Name) > 64 {
			return fmt.Errorf("[%d].name: %d bytes, limit 64", i, len(k.Name))
		}
		if err := reason(k.Name); err != nil {
			return fmt.Errorf("[%d].name: %w", i, err)
		}
		if err := enum(k.Scope, ScopeAdmin, ScopeInference); err != nil {
			return fmt.Errorf("[%d].scope: %w", i, err)
		}
		if b, err := hex.DecodeString(k.Digest); err != nil || len(b) != 32 {
			return fmt.Errorf("[%d].digest: want 64 hex digits", i)
		}
	}
	return nil
}
