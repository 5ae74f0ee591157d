// Package election runs master election on the membership view: each node
// publishes its log position as a telemetry reading, and one goroutine per
// node decides (with the pure rules of election/decide) whether this node
// should be master, follow another, or step down, and asks the node to
// change role.
package election

import (
	"encoding/json"

	"github.com/skulk/skulk/internal/ids"
)

// PositionKey is the telemetry key of a node's Position.
const PositionKey = "pos"

// Position is what each node publishes about itself for elections and
// cluster diagnostics.
type Position struct {
	Term            ids.Term   `json:"term"`
	Index           ids.Index  `json:"index"`
	MasterOf        ids.Term   `json:"master_of,omitempty"` // the term it is master in, or 0
	Master          ids.NodeID `json:"master,omitempty"`    // the master it follows or is
	StartedAtUnixMs int64      `json:"started_at_unix_ms"`
	StateHash       string     `json:"state_hash"`
	Version         string     `json:"version"`
	Commit          string     `json:"commit"`
	// HistoryLost, when set, says this node's log lost history (damage,
	// not a torn tail) that no operator acknowledged: the election ranks
	// it by what it is known to share with the others (see decide).
	HistoryLost *HistoryLoss `json:"history_lost,omitempty"`
}

// HistoryLoss is where a node's log lost its history: after index After,
// whose event was of term Term.
type HistoryLoss struct {
	After ids.Index `json:"after"`
	Term  ids.Term  `json:"term"`
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
