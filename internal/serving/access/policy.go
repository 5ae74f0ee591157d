package access

import (
	"fmt"
	"net/http"
	"sort"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Ring is the set of keys a node enforces: its own and every member's. It is
// immutable once built, so one Ring may serve many requests at once.
type Ring struct {
	h        Hasher
	byDigest map[string]event.APIKey
}

// NewRing builds the ring of own (this node's configured keys) and of the
// digests each member reported through the State.
func NewRing(h Hasher, own []Key, cluster map[ids.NodeID][]event.APIKey) *Ring {
	r := &Ring{h: h, byDigest: map[string]event.APIKey{}}
	for _, k := range h.Entries(own) {
		r.add(k)
	}
	nodes := make([]ids.NodeID, 0, len(cluster))
	for n := range cluster {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i] < nodes[j] })
	for _, n := range nodes {
		for _, k := range cluster[n] {
			r.add(k)
		}
	}
	return r
}

// StateRing is the ring a node enforces at State s: its own keys, the keys
// every member configured (s.APIKeys) and the keys added at run time
// (s.AddedKeys).
func StateRing(h Hasher, own []Key, s state.State) *Ring {
	r := NewRing(h, own, s.APIKeys)
	names := make([]string, 0, len(s.AddedKeys))
	for name := range s.AddedKeys {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		k := s.AddedKeys[name]
		r.add(event.APIKey{Name: name, Scope: k.Scope, Digest: k.Digest})
	}
	return r
}

// add keeps the wider scope when two nodes configured the same key.
func (r *Ring) add(k event.APIKey) {
	if prev, ok := r.byDigest[k.Digest]; ok && prev.Scope == event.ScopeAdmin {
		return
	}
	r.byDigest[k.Digest] = k
}

// Len is the number of distinct keys.
func (r *Ring) Len() int {
	if r == nil {
		return 0
	}
	return len(r.byDigest)
}

// Lookup finds the key a credential is.
func (r *Ring) Lookup(credential string) (event.APIKey, bool) {
	if r == nil || credential == "" {
		return event.APIKey{}, false
	}
	k, ok := r.byDigest[r.h.Digest(credential)]
	return k, ok
}

// Policy decides requests. The zero Policy has no keys and is not open: it
// serves loopback clients only.
type Policy struct {
	Ring *Ring
	// Open (--api-open) serves every address without a key while no key
	// is set anywhere in the cluster.
	Open bool
}

// Request is what Decide needs to know of an HTTP request.
type Request struct {
	Loopback bool // from a loopback address
	// Credentials are the keys presented (bearer token, x-api-key); empty
	// strings are ignored.
	Credentials []string
	Admin       bool // the route needs the admin scope
	Route       string
}

// Denied is a refused request: the HTTP status and what to tell the client.
type Denied struct {
	Status int
	Reason string
}

func (d *Denied) Error() string   { return d.Reason }
func (d *Denied) HTTPStatus() int { return d.Status }

// Decide admits the request, naming the key that admitted it ("" when none
// was needed), or says why not.
func (p Policy) Decide(r Request) (string, *Denied) {
	k, denied := p.DecideKey(r)
	return k.Name, denied
}

// DecideKey is Decide, returning the whole key the request presented (its
// name and digest; the zero key when none was valid), denied or not.
func (p Policy) DecideKey(r Request) (event.APIKey, *Denied) {
	if p.Ring.Len() == 0 {
		if r.Loopback || p.Open {
			return event.APIKey{}, nil
		}
		return event.APIKey{}, &Denied{Status: http.StatusForbidden, Reason: "this node serves clients on other addresses only with an API key: " +
			"add a key from the node's machine (skulk keys add NAME --save) or set SKULK_API_KEY (admin) or SKULK_INFERENCE_KEYS on a node of the cluster, and send the key as \"Authorization: Bearer KEY\", " +
			"or restart the node with --api-open to serve every address without a key"}
	}
	presented := false
	for _, c := range r.Credentials {
		if c == "" {
			continue
		}
		presented = true
		k, ok := p.Ring.Lookup(c)
		if !ok {
			continue
		}
		if r.Admin && k.Scope != event.ScopeAdmin {
			return k, &Denied{Status: http.StatusForbidden, Reason: fmt.Sprintf(
				"the key %q may use inference and read-only routes; %s needs the admin key (SKULK_API_KEY, or an admin key added with skulk keys add)", k.Name, r.Route)}
		}
		return k, nil
	}
	if !presented {
		return event.APIKey{}, &Denied{Status: http.StatusUnauthorized, Reason: "this cluster requires an API key: send the header \"Authorization: Bearer KEY\" or \"x-api-key: KEY\" (the skulk commands send SKULK_API_KEY, or the key saved by skulk keys add --save)"}
	}
	return event.APIKey{}, &Denied{Status: http.StatusUnauthorized, Reason: "the API key is not valid"}
}
