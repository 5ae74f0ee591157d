package dataplane

import "strconv"

// RingID names a ring for the lifetime of a node; it is never reused, so a
// stale wake or control message cannot alias a replacement ring.
type RingID uint64

// EdgeID names an edge within a run; it is the preamble of the edge stream.
type EdgeID uint64

// ObjectID names an object record on an edge.
type ObjectID uint64

// NodeID names a peer node.
type NodeID string

// Generation counts runner process incarnations; handles minted for one
// generation are invalid in every later one.
type Generation uint64

func (r RingID) String() string { return strconv.FormatUint(uint64(r), 10) }
func (e EdgeID) String() string { return strconv.FormatUint(uint64(e), 10) }
