package plane

import (
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

func TestDesiredVoters(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 3, 4: 3, 5: 5, 6: 5, 9: 5} {
		if got := desiredVoters(n); got != want {
			t.Errorf("desiredVoters(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestPlanConf(t *testing.T) {
	const self = 1
	c := func(id uint64, alive bool, started int64, match uint64) candidate {
		cd := candidate{Raft: id, Node: "n", Alive: alive, StartedAt: started, Match: match, Joinable: alive}
		if !alive {
			cd.GoneFor = 10 * time.Minute
		}
		return cd
	}
	tests := []struct {
		name     string
		voters   []uint64
		learners []uint64
		cands    []candidate
		want     pb.ConfChangeType
		node     uint64
		none     bool
		commit   uint64
	}{
		{name: "alone, nothing to do", voters: []uint64{1}, cands: []candidate{c(1, true, 0, 10)}, none: true},
		{name: "a joiner becomes a learner", voters: []uint64{1}, cands: []candidate{c(1, true, 0, 10), c(2, true, 5, 0)},
			want: pb.ConfChangeType_ConfChangeAddLearnerNode, node: 2},
		{name: "a caught-up learner votes", voters: []uint64{1}, learners: []uint64{2}, cands: []candidate{c(1, true, 0, 10), c(2, true, 5, 10)},
			want: pb.ConfChangeType_ConfChangeAddNode, node: 2},
		{name: "a learner far behind waits", voters: []uint64{1}, learners: []uint64{2}, cands: []candidate{c(1, true, 0, 5000), c(2, true, 5, 0)}, none: true, commit: 5000},
		{name: "the longest-up learner is promoted first", voters: []uint64{1}, learners: []uint64{2, 3},
			cands: []candidate{c(1, true, 0, 10), c(2, true, 9, 10), c(3, true, 4, 10)}, want: pb.ConfChangeType_ConfChangeAddNode, node: 3},
		{name: "four members keep three voters", voters: []uint64{1, 2, 3}, learners: []uint64{4},
			cands: []candidate{c(1, true, 0, 10), c(2, true, 1, 10), c(3, true, 2, 10), c(4, true, 3, 10)}, none: true},
		{name: "a voter gone past the timeout is replaced by a learner",
			voters: []uint64{1, 2, 3}, learners: []uint64{4},
			cands: []candidate{c(1, true, 0, 10), c(2, true, 1, 10), c(3, false, 2, 10), c(4, true, 3, 10)},
			want:  pb.ConfChangeType_ConfChangeAddNode, node: 4},
		{name: "then the gone voter leaves",
			voters: []uint64{1, 2, 3, 4},
			cands:  []candidate{c(1, true, 0, 10), c(2, true, 1, 10), c(3, false, 2, 10), c(4, true, 3, 10)},
			want:   pb.ConfChangeType_ConfChangeRemoveNode, node: 3},
		{name: "a voter gone briefly stays",
			voters: []uint64{1, 2, 3}, learners: []uint64{4},
			cands: []candidate{c(1, true, 0, 10), c(2, true, 1, 10), {Raft: 3, GoneFor: time.Minute}, c(4, true, 3, 10)}, none: true},
		{name: "a replaced voter that came back is demoted, youngest first",
			voters: []uint64{1, 2, 3, 4},
			cands:  []candidate{c(1, true, 0, 10), c(2, true, 1, 10), c(3, true, 2, 10), c(4, true, 3, 10)},
			want:   pb.ConfChangeType_ConfChangeAddLearnerNode, node: 4},
		{name: "the leader never changes itself",
			voters: []uint64{1, 2, 3, 4},
			cands:  []candidate{c(1, true, 9, 10), c(2, true, 1, 10), c(3, true, 2, 10), c(4, true, 3, 10)},
			want:   pb.ConfChangeType_ConfChangeAddLearnerNode, node: 4},
		{name: "a node of another cluster is not added", voters: []uint64{1},
			cands: []candidate{c(1, true, 0, 10), {Raft: 2, Alive: true}}, none: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			commit := tt.commit
			if commit == 0 {
				commit = 10
			}
			cc := planConf(confView{Self: self, Voters: tt.voters, Learners: tt.learners, Commit: commit}, tt.cands, 5*time.Minute)
			if tt.none {
				if cc != nil {
					t.Fatalf("planned %v %x, want nothing", cc.GetType(), cc.GetNodeId())
				}
				return
			}
			if cc == nil || cc.GetType() != tt.want || cc.GetNodeId() != tt.node {
				t.Fatalf("planned %v, want %v of %d", cc, tt.want, tt.node)
			}
		})
	}
}
