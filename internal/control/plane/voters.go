package plane

import (
	"slices"
	"sort"
	"time"

	"github.com/fxamacker/cbor/v2"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/skulk/skulk/internal/platform/ids"
)

// MaxVoters bounds the voters: more slow every decision and add no safety a
// home cluster needs.
const MaxVoters = 5

// DefaultVoterTimeout is how long a voter may be gone before a healthy
// learner replaces it.
const DefaultVoterTimeout = 5 * time.Minute

// candidate is one node as the leader's membership duty sees it.
type candidate struct {
	Raft      uint64
	Node      ids.NodeID
	Gossip    string
	Alive     bool
	GoneFor   time.Duration // how long it has not been alive (0 while alive)
	StartedAt int64         // when its process started (longest-up first)
	Joinable  bool          // alive, announced, fresh or of this cluster
	Match     uint64        // what the leader knows it holds
}

// confView is the configuration the plan starts from.
type confView struct {
	Self     uint64
	Voters   []uint64
	Learners []uint64
	Commit   uint64
}

// desiredVoters is how many voters n members should have: all of them up
// to MaxVoters, an odd number from three on (four voters tolerate no more
// failures than three and need one more answer to decide).
func desiredVoters(n int) int {
	n = min(n, MaxVoters)
	if n >= 3 && n%2 == 0 {
		n--
	}
	return n
}

// caughtUp is how close to the commit index a learner must be to vote: a
// learner this close catches up within a heartbeat or two, and a new
// voter that lags does not stall decisions.
const caughtUp = 1024

// planConf is the leader's membership duty as a pure step: at most one
// configuration change that brings the voters closer to what the members
// call for. Joining nodes become learners; learners that are caught up
// become voters while the cluster wants more; a voter gone past timeout is
// replaced by a learner first and removed after; extra voters are
// demoted, youngest first. The leader never changes itself.
func planConf(cv confView, cands []candidate, timeout time.Duration) *pb.ConfChange {
	byID := map[uint64]candidate{}
	for _, c := range cands {
		byID[c.Raft] = c
	}
	inConf := map[uint64]bool{}
	for _, id := range cv.Voters {
		inConf[id] = true
	}
	for _, id := range cv.Learners {
		inConf[id] = true
	}
	sorted := slices.Clone(cands)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].StartedAt != sorted[j].StartedAt {
			return sorted[i].StartedAt < sorted[j].StartedAt
		}
		return sorted[i].Node < sorted[j].Node
	})
	// Joiners first: a node that is not yet a learner cannot catch up.
	for _, c := range sorted {
		if !inConf[c.Raft] && c.Joinable && c.Raft != cv.Self {
			return change(pb.ConfChangeType_ConfChangeAddLearnerNode, c)
		}
	}
	alive := func(id uint64) bool { return id == cv.Self || byID[id].Alive }
	gone := func(id uint64) bool { return id != cv.Self && !byID[id].Alive && byID[id].GoneFor >= timeout }
	members := 0
	for id := range inConf {
		if !gone(id) {
			members++
		}
	}
	want := desiredVoters(members)
	// A voter briefly absent still stands: replacing it on every blip
	// would churn the configuration; past the timeout it is gone.
	standing, goneVoters := 0, []uint64{}
	for _, id := range cv.Voters {
		if gone(id) {
			goneVoters = append(goneVoters, id)
		} else {
			standing++
		}
	}
	// Promote the longest-up caught-up learner while the cluster wants
	// more voters.
	if standing < want {
		for _, c := range sorted {
			if slices.Contains(cv.Learners, c.Raft) && alive(c.Raft) && c.Match+caughtUp >= cv.Commit {
				return change(pb.ConfChangeType_ConfChangeAddNode, c)
			}
		}
	}
	// A voter gone past timeout leaves once enough voters stand in.
	if len(goneVoters) > 0 && standing >= want {
		slices.Sort(goneVoters)
		return &pb.ConfChange{Type: pb.ConfChangeType_ConfChangeRemoveNode.Enum(), NodeId: proto.Uint64(goneVoters[0])}
	}
	// Too many voters (a replaced voter came back): demote the youngest.
	if standing > want {
		for i := len(sorted) - 1; i >= 0; i-- {
			c := sorted[i]
			if slices.Contains(cv.Voters, c.Raft) && c.Alive && c.Raft != cv.Self {
				return change(pb.ConfChangeType_ConfChangeAddLearnerNode, c)
			}
		}
	}
	// Learners gone past timeout leave the configuration.
	for _, id := range slices.Sorted(slices.Values(cv.Learners)) {
		if gone(id) {
			return &pb.ConfChange{Type: pb.ConfChangeType_ConfChangeRemoveNode.Enum(), NodeId: proto.Uint64(id)}
		}
	}
	return nil
}

func change(t pb.ConfChangeType, c candidate) *pb.ConfChange {
	ctx, _ := cbor.Marshal(Member{Node: c.Node, Gossip: c.Gossip})
	return &pb.ConfChange{Type: t.Enum(), NodeId: proto.Uint64(c.Raft), Context: ctx}
}
