package state

import (
	"fmt"
	"maps"
	"slices"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Apply returns the State after ie. It never modifies s; on error it returns
// s unchanged along with an *ApplyError. ie.Index must be s.LastIndex+1; the
// term may rise only through MasterElected and never fall.
func Apply(s State, ie event.IndexedEvent) (State, error) {
	fail := func(err error) (State, error) {
		var k event.Kind
		if ie.Event != nil {
			k = ie.Event.Kind()
		}
		return s, &ApplyError{Term: ie.Term, Index: ie.Index, Kind: k, Err: err}
	}
	if ie.Index != s.LastIndex+1 {
		return fail(fmt.Errorf("index %d, want %d: %w", ie.Index, s.LastIndex+1, ErrOutOfOrder))
	}
	if err := ie.Validate(); err != nil {
		return fail(err)
	}
	if err := checkTerm(s, ie); err != nil {
		return fail(err)
	}
	next, err := step(s, ie)
	if err != nil {
		return fail(err)
	}
	next.LastIndex = ie.Index
	next.Term = ie.Term
	return next, nil
}

func checkTerm(s State, ie event.IndexedEvent) error {
	if ie.Term < s.Term {
		return fmt.Errorf("term %d below current term %d: %w", ie.Term, s.Term, ErrStaleTerm)
	}
	me, elected := ie.Event.(event.MasterElected)
	switch {
	case elected && me.Term != ie.Term:
		return fmt.Errorf("MasterElected names term %d at a position of term %d: %w", me.Term, ie.Term, ErrTermMismatch)
	case elected && me.Term <= s.Term:
		return fmt.Errorf("election of term %d does not raise current term %d: %w", me.Term, s.Term, ErrStaleTerm)
	case !elected && ie.Term > s.Term:
		return fmt.Errorf("term rose from %d to %d without an election: %w", s.Term, ie.Term, ErrTermMismatch)
	}
	return nil
}

// step dispatches on the event's type. Each case receives a shallow copy of
// the State (a value), so assigning its fields never reaches the caller's;
// maps are cloned by the helpers that write them.
func step(s State, ie event.IndexedEvent) (State, error) {
	switch e := ie.Event.(type) {
	case event.MasterElected:
		s.Master = e.Node
		return s, nil
	case event.TracingSet:
		s.Tracing = e.Enabled
		return s, nil
	case event.NodeJoined:
		return nodeJoined(s, e)
	case event.NodeLeft:
		return nodeLeft(s, e)
	case event.DownloadPending:
		return download(s, e.Node, e.Model, Download{Status: DownloadPending})
	case event.DownloadCompleted:
		return download(s, e.Node, e.Model, Download{Status: DownloadCompleted, Bytes: e.Bytes})
	case event.DownloadFailed:
		return download(s, e.Node, e.Model, Download{Status: DownloadFailed, Reason: e.Reason})
	case event.InstanceCreated:
		return instanceCreated(s, e, ie.Index)
	case event.InstanceDeleted:
		return instanceDeleted(s, e)
	case event.InstanceFailed:
		return instanceFailed(s, e, ie.Index)
	case event.RunnerStatusUpdated:
		return runnerStatusUpdated(s, e)
	case event.RetiredTask:
		// The tasks of requests that went through the control plane are
		// no longer tracked: an old log's task events change nothing.
		return s, nil
	case event.APIKeysSet:
		return apiKeysSet(s, e)
	case event.ModelAdded:
		return modelAdded(s, e)
	case event.ModelRemoved:
		return modelRemoved(s, e)
	case event.APIKeyAdded:
		return apiKeyAdded(s, e)
	case event.APIKeyRemoved:
		return apiKeyRemoved(s, e)
	}
	// Unreachable while every event kind has a case; a test checks that.
	return s, fmt.Errorf("no apply rule for %s: %w", ie.Event.Kind(), ErrConflict)
}

// with returns a copy of m with k set to v; m itself is untouched.
func with[K comparable, V any](m map[K]V, k K, v V) map[K]V {
	out := make(map[K]V, len(m)+1)
	maps.Copy(out, m)
	out[k] = v
	return out
}

// without returns a copy of m without k.
func without[K comparable, V any](m map[K]V, k K) map[K]V {
	out := maps.Clone(m)
	delete(out, k)
	return out
}

// apiKeysSet replaces a node's API keys. A node's keys outlive its leaving:
// a protected node that goes away must not leave the cluster open.
func apiKeysSet(s State, e event.APIKeysSet) (State, error) {
	if len(e.Keys) == 0 {
		if _, ok := s.APIKeys[e.Node]; ok {
			s.APIKeys = without(s.APIKeys, e.Node)
		}
		return s, nil
	}
	s.APIKeys = with(s.APIKeys, e.Node, slices.Clone(e.Keys))
	return s, nil
}

// apiKeyAdded adds a run-time key. The same key again under its name is a
// no-op (a command retried); another key under a taken name conflicts (the
// master refuses it before it is logged).
func apiKeyAdded(s State, e event.APIKeyAdded) (State, error) {
	if have, ok := s.AddedKeys[e.Key.Name]; ok {
		if have.Digest == e.Key.Digest && have.Scope == e.Key.Scope {
			return s, nil
		}
		return s, fmt.Errorf("key %s: %w", e.Key.Name, ErrExists)
	}
	if len(s.AddedKeys) >= event.MaxAddedAPIKeys {
		return s, fmt.Errorf("%d run-time keys, limit %d: %w", len(s.AddedKeys), event.MaxAddedAPIKeys, ErrConflict)
	}
	s.AddedKeys = with(s.AddedKeys, e.Key.Name, event.AddedAPIKey{Scope: e.Key.Scope, Digest: e.Key.Digest, Node: e.Node, AtUnixMs: e.AtUnixMs})
	return s, nil
}

// apiKeyRemoved takes a run-time key out of the State.
func apiKeyRemoved(s State, e event.APIKeyRemoved) (State, error) {
	if _, ok := s.AddedKeys[e.Name]; !ok {
		return s, fmt.Errorf("key %s: %w", e.Name, ErrUnknownKey)
	}
	s.AddedKeys = without(s.AddedKeys, e.Name)
	if len(s.AddedKeys) == 0 {
		s.AddedKeys = nil // empty is omitted: the hash of a State without run-time keys
	}
	return s, nil
}

func nodeJoined(s State, e event.NodeJoined) (State, error) {
	n := s.Nodes[e.Node] // a re-join keeps its download outcomes
	n.JoinedAtUnixMs = e.AtUnixMs
	s.Nodes = with(s.Nodes, e.Node, n)
	return s, nil
}

func nodeLeft(s State, e event.NodeLeft) (State, error) {
	if _, ok := s.Nodes[e.Node]; !ok {
		return s, fmt.Errorf("node %s: %w", e.Node, ErrUnknownNode)
	}
	if on := s.InstancesOnNode(e.Node); len(on) > 0 {
		return s, fmt.Errorf("node %s still holds a rank of instance %s: %w", e.Node, on[0], ErrBusy)
	}
	s.Nodes = without(s.Nodes, e.Node)
	return s, nil
}

func download(s State, node ids.NodeID, model ids.ModelID, d Download) (State, error) {
	n, ok := s.Nodes[node]
	if !ok {
		return s, fmt.Errorf("download on node %s: %w", node, ErrUnknownNode)
	}
	n.Downloads = with(n.Downloads, model, d)
	s.Nodes = with(s.Nodes, node, n)
	return s, nil
}

// modelAdded puts a card into the cluster's catalog. The same card again is
// a no-op; another card under a taken id conflicts (the master refuses it
// before it is logged).
func modelAdded(s State, e event.ModelAdded) (State, error) {
	if have, ok := s.Models[e.Card.ID]; ok {
		if event.SameCard(have, e.Card) {
			return s, nil
		}
		return s, fmt.Errorf("model %s already has another card: %w", e.Card.ID, ErrExists)
	}
	s.Models = with(s.Models, e.Card.ID, e.Card)
	return s, nil
}

// modelRemoved takes a card out of the catalog, refused while an instance
// of the model exists (its runners and repairs need the card).
func modelRemoved(s State, e event.ModelRemoved) (State, error) {
	if _, ok := s.Models[e.Model]; !ok {
		return s, fmt.Errorf("model %s: %w", e.Model, ErrUnknownModel)
	}
	for _, id := range sortedKeys(s.Instances) {
		if s.Instances[id].Model == e.Model {
			return s, fmt.Errorf("model %s is used by instance %s: %w", e.Model, id, ErrBusy)
		}
	}
	s.Models = without(s.Models, e.Model)
	if len(s.Models) == 0 {
		s.Models = nil // empty is omitted: the hash of a State without cards
	}
	return s, nil
}
