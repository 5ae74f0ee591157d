// Package access is the API's access policy: which keys a node knows, what
// each may do, and what a request from a given address with a given
// credential is allowed. The policy is pure: Live (live.go) rebuilds it
// on one goroutine from the keys of the node's own configuration and of
// the cluster's State, and the API asks it per request.
//
// Keys never travel or rest in clear. A node turns each configured key into
// a digest, HMAC-SHA256 under a secret derived from the cluster key, and
// shares the digests through the control plane; every member checks a
// presented key by computing its digest. Without the cluster key a digest is
// worthless, and with it the key still cannot be recovered.
package access

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/skulk/skulk/internal/control/event"
)

// Key is a configured API key. Secret never leaves the node.
type Key struct {
	Name   string
	Scope  string // event.ScopeAdmin or event.ScopeInference
	Secret string
}

// String redacts the secret.
func (k Key) String() string { return fmt.Sprintf("%s key %q (redacted)", k.Scope, k.Name) }

// ErrBadKeys is matched (errors.Is) by ParseKeys' errors.
var ErrBadKeys = errors.New("access: invalid API key configuration")

// minKeyLen is the shortest key accepted: shorter ones are guessable.
const minKeyLen = 8

// ParseKeys reads the admin key (SKULK_API_KEY, one key) and the inference
// keys (SKULK_INFERENCE_KEYS: comma-separated NAME=KEY or bare KEY entries).
// Errors name the entry by position, never by its content.
func ParseKeys(admin, inference string) ([]Key, error) {
	var out []Key
	if admin = strings.TrimSpace(admin); admin != "" {
		if len(admin) < minKeyLen {
			return nil, fmt.Errorf("%w: SKULK_API_KEY has %d bytes; use at least %d (e.g. `openssl rand -hex 16`)", ErrBadKeys, len(admin), minKeyLen)
		}
		out = append(out, Key{Name: "admin", Scope: event.ScopeAdmin, Secret: admin})
	}
	names := map[string]bool{"admin": true}
	for i, entry := range strings.Split(inference, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, secret, named := strings.Cut(entry, "=")
		if !named {
			name, secret = fmt.Sprintf("inference-%d", i+1), entry
		}
		name, secret = strings.TrimSpace(name), strings.TrimSpace(secret)
		switch {
		case name == "" || len(name) > 64:
			return nil, fmt.Errorf("%w: SKULK_INFERENCE_KEYS entry %d needs a name of 1..64 bytes before '='", ErrBadKeys, i+1)
		case len(secret) < minKeyLen:
			return nil, fmt.Errorf("%w: SKULK_INFERENCE_KEYS entry %d (%s) has a key of %d bytes; use at least %d", ErrBadKeys, i+1, name, len(secret), minKeyLen)
		case names[name]:
			return nil, fmt.Errorf("%w: SKULK_INFERENCE_KEYS names %q twice (or uses the reserved name admin)", ErrBadKeys, name)
		}
		names[name] = true
		out = append(out, Key{Name: name, Scope: event.ScopeInference, Secret: secret})
	}
	if len(out) > event.MaxAPIKeys {
		return nil, fmt.Errorf("%w: %d keys, at most %d", ErrBadKeys, len(out), event.MaxAPIKeys)
	}
	return out, nil
}

// Hasher computes key digests under the cluster's derived secret.
type Hasher struct{ secret [32]byte }

// NewHasher returns a Hasher for the secret the cluster key derives for API
// keys (clusterkey.PurposeAPIKeys).
func NewHasher(secret [32]byte) Hasher { return Hasher{secret: secret} }

// Digest is HMAC-SHA256(secret, key), in hex.
func (h Hasher) Digest(key string) string {
	m := hmac.New(sha256.New, h.secret[:])
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil))
}

// Entries turns configured keys into what the cluster may know of them,
// sorted by name so that the same configuration gives the same event.
func (h Hasher) Entries(keys []Key) []event.APIKey {
	out := make([]event.APIKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, event.APIKey{Name: k.Name, Scope: k.Scope, Digest: h.Digest(k.Secret)})
	}
	slices.SortFunc(out, func(a, b event.APIKey) int { return strings.Compare(a.Name, b.Name) })
	return out
}
