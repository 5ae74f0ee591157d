package state

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// MaxSnapshotBytes bounds an encoded State accepted by Decode.
const MaxSnapshotBytes = 256 << 20

// The State is encoded with the control plane's one canonical encoding (so
// equal States hash alike), and decoded with its strict rules under the
// snapshot's own size limits. The decoding mode is built once.
var (
	encMode = event.CanonicalEncMode()
	decMode = mustDecMode()
)

func mustDecMode() cbor.DecMode {
	opts := event.StrictDecOptions()
	opts.MaxNestedLevels, opts.MaxArrayElements, opts.MaxMapPairs = 16, 1<<16, 1<<20
	m, err := opts.DecMode()
	if err != nil {
		panic(fmt.Sprintf("state: cbor decoder options: %v", err))
	}
	return m
}

// encoded is a State as snapshots hold it. Every snapshot written so far
// carries a "tasks" map, the in-flight tasks of requests that once went
// through the control plane (and the snapshot of a node that stopped
// mid-request holds some): Decode accepts and drops it, and Encode writes it
// empty, so a State hashes as on the nodes of earlier releases.
type encoded struct {
	State
	Tasks map[string]cbor.RawMessage `cbor:"tasks"`
}

// Encode returns the canonical encoding of s: CBOR core deterministic, so
// equal States have equal bytes.
func Encode(s State) ([]byte, error) {
	b, err := encMode.Marshal(encoded{State: s})
	if err != nil {
		return nil, fmt.Errorf("state: encoding: %w", err)
	}
	return b, nil
}

// Decode strictly decodes a snapshot and checks its invariants; failures
// are a *CorruptError (errors.Is(err, ErrCorrupt)).
func Decode(b []byte) (State, error) {
	if len(b) > MaxSnapshotBytes {
		return State{}, &CorruptError{Err: fmt.Errorf("%d bytes, limit %d", len(b), MaxSnapshotBytes)}
	}
	var e encoded
	if err := decMode.Unmarshal(b, &e); err != nil {
		return State{}, &CorruptError{Err: err}
	}
	s := e.State
	if err := Check(s); err != nil {
		return State{}, &CorruptError{Err: err}
	}
	return s, nil
}

// Hash is the SHA-256 of the canonical encoding: two nodes at the same
// index must report the same Hash.
func Hash(s State) [32]byte {
	b, err := Encode(s)
	if err != nil {
		// State holds only strings, integers, bools, maps and slices of
		// them; encoding cannot fail unless this package is broken.
		panic(err)
	}
	return sha256.Sum256(b)
}

// Check verifies the invariants Apply maintains, for a State that did not
// come from Apply (a snapshot).
func Check(s State) error {
	if s.LastIndex > 0 && s.Term == 0 {
		return errors.New("events applied at term 0")
	}
	if s.Master != "" {
		if err := s.Master.Validate(); err != nil {
			return fmt.Errorf("master: %w", err)
		}
	}
	for id, n := range s.Nodes {
		if err := checkNode(id, n); err != nil {
			return err
		}
	}
	for id, inst := range s.Instances {
		if err := checkInstance(s, id, inst); err != nil {
			return fmt.Errorf("instance %s: %w", id, err)
		}
	}
	for id, c := range s.Models {
		if err := (event.ModelAdded{Card: c}).Validate(); err != nil {
			return fmt.Errorf("model %s: %w", id, err)
		}
		if c.ID != id {
			return fmt.Errorf("model %s holds the card of %s", id, c.ID)
		}
	}
	if len(s.AddedKeys) > event.MaxAddedAPIKeys {
		return fmt.Errorf("%d run-time keys, limit %d", len(s.AddedKeys), event.MaxAddedAPIKeys)
	}
	for name, k := range s.AddedKeys {
		if err := k.Validate(name); err != nil {
			return fmt.Errorf("key %s: %w", name, err)
		}
	}
	if len(s.Failures) > MaxFailures {
		return fmt.Errorf("%d failure records, limit %d", len(s.Failures), MaxFailures)
	}
	seen := map[ids.InstanceID]bool{}
	for i, f := range s.Failures {
		ev := event.InstanceFailed{Instance: f.Instance, Category: f.Category, Detail: f.Detail, AtUnixMs: f.AtUnixMs}
		if err := ev.Validate(); err != nil {
			return fmt.Errorf("failure %d: %w", i, err)
		}
		if seen[f.Instance] {
			return fmt.Errorf("failure %d: second record for instance %s", i, f.Instance)
		}
		seen[f.Instance] = true
	}
	return nil
}

func checkNode(id ids.NodeID, n Node) error {
	if err := (event.NodeJoined{Node: id, AtUnixMs: n.JoinedAtUnixMs}).Validate(); err != nil {
		return err
	}
	for m, d := range n.Downloads {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("node %s download: %w", id, err)
		}
		switch d.Status {
		case DownloadPending, DownloadCompleted, DownloadFailed:
		default:
			return fmt.Errorf("node %s download %s: unknown status %q", id, m, d.Status)
		}
	}
	return nil
}

func checkInstance(s State, id ids.InstanceID, inst Instance) error {
	created := event.InstanceCreated{Instance: id, Model: inst.Model, Backend: inst.Backend,
		Placement: inst.Placement, Layers: inst.Layers, ContextTokens: inst.ContextTokens,
		ExcludedNodes: inst.ExcludedNodes, RefusalHops: inst.RefusalHops, CreatedAtUnixMs: inst.CreatedAtUnixMs}
	if err := created.Validate(); err != nil {
		return err
	}
	if inst.CreatedIndex == 0 || inst.CreatedIndex > s.LastIndex {
		return fmt.Errorf("created at index %d, state is at %d", inst.CreatedIndex, s.LastIndex)
	}
	for r, sh := range inst.Placement {
		if _, ok := s.Nodes[sh.Node]; !ok {
			return fmt.Errorf("rank %d on unknown node %s", r, sh.Node)
		}
	}
	if len(inst.Runners) != len(inst.Placement) {
		return fmt.Errorf("%d runners for %d ranks", len(inst.Runners), len(inst.Placement))
	}
	for r, run := range inst.Runners {
		if run.ID != "" {
			ev := event.RunnerStatusUpdated{Runner: run.ID, Instance: id, Rank: uint32(r),
				Node: inst.Placement[r].Node, Status: run.Status, Reason: run.Reason}
			if err := ev.Validate(); err != nil {
				return err
			}
		} else if run.Status != event.RunnerPending || run.Reason != "" {
			return fmt.Errorf("rank %d has status %q before any report", r, run.Status)
		}
	}
	if inst.Status != InstanceFailed && inst.Status != instanceStatus(Instance{Runners: inst.Runners}) {
		return fmt.Errorf("status %q disagrees with its runners", inst.Status)
	}
	return nil
}
