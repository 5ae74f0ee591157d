package master

import (
	"sort"
	"strings"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// reservedKeyName is the name of the key SKULK_API_KEY configures on a node.
const reservedKeyName = "admin"

// envVar names the variable that configured a node's key of scope.
func envVar(scope string) string {
	if scope == event.ScopeAdmin {
		return "SKULK_API_KEY"
	}
	return "SKULK_INFERENCE_KEYS"
}

// configured lists the nodes whose environment configured a key named
// name, sorted, with that key's scope.
func configured(s state.State, name string) (nodes []ids.NodeID, scope string) {
	for n, keys := range s.APIKeys {
		for _, k := range keys {
			if k.Name == name {
				nodes, scope = append(nodes, n), k.Scope
			}
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i] < nodes[j] })
	return nodes, scope
}

func nodeList(nodes []ids.NodeID) string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = string(n)
	}
	return strings.Join(out, ", ")
}

// adminKeys counts the admin keys in force: run-time ones, and the distinct
// ones nodes configured, except skip (a run-time key about to go).
func adminKeys(s state.State, skip string) int {
	digests := map[string]bool{}
	for name, k := range s.AddedKeys {
		if name != skip && k.Scope == event.ScopeAdmin {
			digests[k.Digest] = true
		}
	}
	for _, keys := range s.APIKeys {
		for _, k := range keys {
			if k.Scope == event.ScopeAdmin {
				digests[k.Digest] = true
			}
		}
	}
	return len(digests)
}

// anyKeys reports whether a key other than skip is in force.
func anyKeys(s state.State, skip string) bool {
	for name := range s.AddedKeys {
		if name != skip {
			return true
		}
	}
	for _, keys := range s.APIKeys {
		if len(keys) > 0 {
			return true
		}
	}
	return false
}

// decideAddKey admits a run-time key. The same key again under its name is
// done already (a retry); a taken name, a name a node's environment
// configured or the name of SKULK_API_KEY's key is a conflict. An
// inference key is refused while the cluster has no admin key: it would
// lock every client, loopback too, out of the admin routes.
func decideAddKey(s state.State, c event.AddAPIKey, in inputs) ([]event.Event, error) {
	name := c.Key.Name
	if have, ok := s.AddedKeys[name]; ok {
		if have.Digest == c.Key.Digest && have.Scope == c.Key.Scope {
			return nil, nil
		}
		return nil, fault.Errorf(fault.ClassConflict, "the cluster already has a key named %s; choose another name, or remove it first (skulk keys rm %s)", name, name)
	}
	if nodes, scope := configured(s, name); len(nodes) > 0 {
		return nil, fault.Errorf(fault.ClassConflict, "the name %s is taken by a key configured with %s on node %s; choose another name", name, envVar(scope), nodeList(nodes))
	}
	if name == reservedKeyName {
		return nil, fault.ParamErrorf("name", "the name %s is reserved for the key SKULK_API_KEY configures; choose another name", reservedKeyName)
	}
	if len(s.AddedKeys) >= event.MaxAddedAPIKeys {
		return nil, fault.Errorf(fault.ClassConflict, "the cluster has %d run-time keys, the most it holds; remove one first (skulk keys list, skulk keys rm NAME)", len(s.AddedKeys))
	}
	if c.Key.Scope == event.ScopeInference && adminKeys(s, "") == 0 {
		return nil, fault.Errorf(fault.ClassConflict, "the cluster has no admin key, and an inference key alone would lock every client out of the admin routes: add an admin key first (skulk keys add NAME --save)")
	}
	return []event.Event{event.APIKeyAdded{Key: c.Key, Node: c.Node, AtUnixMs: in.nowMs}}, nil
}

// decideRemoveKey takes a run-time key out. A key a node's environment
// configured stays until that node restarts without it; the last admin key
// stays while other keys are in force (the admin routes would be locked).
func decideRemoveKey(s state.State, c event.RemoveAPIKey) ([]event.Event, error) {
	k, ok := s.AddedKeys[c.Name]
	if !ok {
		if nodes, scope := configured(s, c.Name); len(nodes) > 0 {
			return nil, fault.Errorf(fault.ClassConflict, "the key %s is configured with %s on node %s, not added at run time: remove it from %s there and restart that node", c.Name, envVar(scope), nodeList(nodes), envVar(scope))
		}
		return nil, fault.Errorf(fault.ClassNotFound, "the cluster has no key named %s (skulk keys list shows them)", c.Name)
	}
	if k.Scope == event.ScopeAdmin && adminKeys(s, c.Name) == 0 && anyKeys(s, c.Name) {
		return nil, fault.Errorf(fault.ClassConflict, "%s is the cluster's last admin key, and the other keys would lock every client out of the admin routes: add another admin key first (skulk keys add NAME), or remove the inference keys", c.Name)
	}
	return []event.Event{event.APIKeyRemoved{Name: c.Name}}, nil
}
