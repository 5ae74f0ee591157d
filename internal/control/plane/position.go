package plane

import (
	"encoding/json"

	"github.com/skulk/skulk/internal/platform/ids"
)

// PositionKey is the telemetry key of a node's Position.
const PositionKey = "pos"

// Position is what each node publishes about itself, for diagnostics and
// for fresh nodes deciding whether a cluster exists to join.
type Position struct {
	Term            ids.Term   `json:"term"`
	Index           ids.Index  `json:"index"`
	MasterOf        ids.Term   `json:"master_of,omitempty"` // the term it leads in, or 0
	Master          ids.NodeID `json:"master,omitempty"`    // the leader it follows or is
	StartedAtUnixMs int64      `json:"started_at_unix_ms"`
	StateHash       string     `json:"state_hash"`
	Version         string     `json:"version"`
	Commit          string     `json:"commit"`
	// Cluster is the id of the cluster the node's log belongs to; empty on
	// a fresh node that has none yet.
	Cluster string `json:"cluster,omitempty"`
	// Voter says the node votes (else it is a learner, or fresh).
	Voter bool `json:"voter,omitempty"`
	// RaftCommit is the node's raft commit index.
	RaftCommit uint64 `json:"raft_commit,omitempty"`
	// Halted says why the node takes no part in decisions (its log stopped
	// writing).
	Halted string `json:"halted,omitempty"`
}

// Encode returns the reading's value.
func (p Position) Encode() []byte {
	b, _ := json.Marshal(p)
	return b
}

// DecodePosition parses a reading's value.
func DecodePosition(b []byte) (Position, error) {
	var p Position
	err := json.Unmarshal(b, &p)
	return p, err
}
