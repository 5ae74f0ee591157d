package state

import (
	"slices"
	"testing"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

func TestQueries(t *testing.T) {
	s := replay(t, base(t),
		twoRank("i0", "m", "c", "a"), // sorts before i1
		twoRank("i2", "other", "b", "c"),
		ready("i0", 0, "c"), ready("i0", 1, "a"),
		event.DownloadCompleted{Node: "b", Model: "m", Bytes: 7},
	)
	tests := []struct {
		name      string
		got, want any
	}{
		{"nodes", s.NodeIDs(), []ids.NodeID{"a", "b", "c"}},
		{"instances_on_a", s.InstancesOnNode("a"), []ids.InstanceID{"i0", "i1"}},
		{"instances_on_c", s.InstancesOnNode("c"), []ids.InstanceID{"i0", "i2"}},
		{"instances_on_unknown", s.InstancesOnNode("z"), []ids.InstanceID(nil)},
		{"ready_for_m", s.ReadyInstancesForModel("m"), []ids.InstanceID{"i0", "i1"}},
		{"ready_for_other", s.ReadyInstancesForModel("other"), []ids.InstanceID(nil)},
		{"shards_on_a", s.ShardsOnNode("a"), []ShardRef{
			{Instance: "i0", Rank: 1, Shard: event.Shard{Node: "a", LayerStart: 4, LayerEnd: 8, HoldsHead: true}},
			{Instance: "i1", Rank: 0, Shard: event.Shard{Node: "a", LayerStart: 0, LayerEnd: 4, HoldsEmbedding: true}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !equal(tt.got, tt.want) {
				t.Fatalf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
	if d, ok := s.DownloadOf("b", "m"); !ok || d.Bytes != 7 {
		t.Fatalf("DownloadOf = %+v, %v", d, ok)
	}
	if _, ok := s.DownloadOf("z", "m"); ok {
		t.Fatal("DownloadOf an unknown node reported a download")
	}
}

func TestRunnersOfInstanceIsACopy(t *testing.T) {
	s := base(t)
	before := Hash(s)
	rs, ok := s.RunnersOfInstance("i1")
	if !ok || len(rs) != 2 || rs[1].Status != event.RunnerReady {
		t.Fatalf("got %+v, %v", rs, ok)
	}
	rs[0].Status = event.RunnerFailed
	if Hash(s) != before {
		t.Fatal("modifying the returned runners changed the State")
	}
	if _, ok := s.RunnersOfInstance("nope"); ok {
		t.Fatal("unknown instance reported")
	}
}

func equal(a, b any) bool {
	switch a := a.(type) {
	case []ids.NodeID:
		return slices.Equal(a, b.([]ids.NodeID))
	case []ids.InstanceID:
		return slices.Equal(a, b.([]ids.InstanceID))
	case []ShardRef:
		return slices.Equal(a, b.([]ShardRef))
	}
	return false
}
