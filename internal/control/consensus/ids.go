package consensus

import (
	"hash/fnv"

	"github.com/skulk/skulk/internal/platform/ids"
)

// RaftID is a node's id in Raft: a 64-bit hash of its node id (raft wants
// a non-zero integer). Two node ids colliding would take 2^32 nodes.
func RaftID(node ids.NodeID) uint64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	if v := h.Sum64(); v != 0 {
		return v
	}
	return 1
}
