package state

import (
	"fmt"
	"slices"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

func instanceCreated(s State, e event.InstanceCreated, at ids.Index) (State, error) {
	if _, ok := s.Instances[e.Instance]; ok {
		return s, fmt.Errorf("instance %s: %w", e.Instance, ErrExists)
	}
	for r, sh := range e.Placement {
		if _, ok := s.Nodes[sh.Node]; !ok {
			return s, fmt.Errorf("rank %d on node %s: %w", r, sh.Node, ErrUnknownNode)
		}
	}
	runners := make([]Runner, len(e.Placement))
	for r := range runners {
		runners[r].Status = event.RunnerPending
	}
	// Slices are cloned so the State never aliases the caller's event.
	s.Instances = with(s.Instances, e.Instance, Instance{
		Model:           e.Model,
		Backend:         e.Backend,
		Placement:       slices.Clone(e.Placement),
		Layers:          e.Layers,
		ContextTokens:   e.ContextTokens,
		ExcludedNodes:   slices.Clone(e.ExcludedNodes),
		RefusalHops:     e.RefusalHops,
		CreatedAtUnixMs: e.CreatedAtUnixMs,
		CreatedIndex:    at,
		Status:          InstancePending,
		Runners:         runners,
		CacheType:       e.CacheType,
		Speculative:     e.Speculative,
		DraftModel:      e.DraftModel,
		OnDemand:        e.OnDemand,
		KeepAliveMs:     e.KeepAliveMs,
	})
	return s, nil
}

func instanceDeleted(s State, e event.InstanceDeleted) (State, error) {
	if _, ok := s.Instances[e.Instance]; !ok {
		return s, fmt.Errorf("instance %s: %w", e.Instance, ErrUnknownInstance)
	}
	s.Instances = without(s.Instances, e.Instance)
	return s, nil
}

func instanceFailed(s State, e event.InstanceFailed, at ids.Index) (State, error) {
	inst, ok := s.Instances[e.Instance]
	if !ok {
		return s, fmt.Errorf("instance %s: %w", e.Instance, ErrUnknownInstance)
	}
	inst.Status = InstanceFailed
	s.Instances = with(s.Instances, e.Instance, inst)

	nodes := make([]ids.NodeID, len(inst.Placement))
	for r, sh := range inst.Placement {
		nodes[r] = sh.Node
	}
	rec := Failure{Instance: e.Instance, Model: inst.Model, Category: e.Category, Detail: e.Detail,
		Nodes: nodes, AtUnixMs: e.AtUnixMs, Index: at}
	// A repeated report replaces the older record; the newest MaxFailures
	// survive.
	failures := make([]Failure, 0, len(s.Failures)+1)
	for _, f := range s.Failures {
		if f.Instance != e.Instance {
			failures = append(failures, f)
		}
	}
	failures = append(failures, rec)
	if n := len(failures) - MaxFailures; n > 0 {
		failures = failures[n:]
	}
	s.Failures = failures
	return s, nil
}

func runnerStatusUpdated(s State, e event.RunnerStatusUpdated) (State, error) {
	inst, ok := s.Instances[e.Instance]
	if !ok {
		return s, fmt.Errorf("instance %s: %w", e.Instance, ErrUnknownInstance)
	}
	if int(e.Rank) >= len(inst.Placement) {
		return s, fmt.Errorf("rank %d of a %d-rank instance %s: %w", e.Rank, len(inst.Placement), e.Instance, ErrConflict)
	}
	if want := inst.Placement[e.Rank].Node; e.Node != want {
		return s, fmt.Errorf("rank %d of instance %s is placed on %s, reported from %s: %w", e.Rank, e.Instance, want, e.Node, ErrConflict)
	}
	cur := inst.Runners[e.Rank]
	if cur.ID == e.Runner && cur.Status.Terminal() {
		return s, fmt.Errorf("runner %s is already %s: %w", e.Runner, cur.Status, ErrConflict)
	}
	runners := slices.Clone(inst.Runners)
	runners[e.Rank] = Runner{ID: e.Runner, Status: e.Status, Reason: e.Reason}
	inst.Runners = runners
	inst.Status = instanceStatus(inst)
	s.Instances = with(s.Instances, e.Instance, inst)
	return s, nil
}

// instanceStatus derives the status from the runners; a failed instance
// stays failed until deleted.
func instanceStatus(inst Instance) InstanceStatus {
	if inst.Status == InstanceFailed {
		return InstanceFailed
	}
	for _, r := range inst.Runners {
		if !r.Status.Serving() {
			return InstancePending
		}
	}
	return InstanceReady
}
