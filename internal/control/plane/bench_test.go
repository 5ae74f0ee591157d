package plane

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// BenchmarkPlacementCommit times a placement from the call to its commit on
// a majority of three voters, through a follower (forwarded to the leader)
// and on the leader itself. Each node's log is on disk and fsynced.
func BenchmarkPlacementCommit(b *testing.B) {
	nodes := []ids.NodeID{"node-a", "node-b", "node-c"}
	n := formed(b, nodes...)
	lead, _ := n.leader(nodes)
	var follower ids.NodeID
	for _, id := range nodes {
		if id != lead {
			follower = id
			break
		}
	}
	for _, via := range []struct {
		name string
		id   ids.NodeID
	}{{"leader", lead}, {"follower", follower}} {
		b.Run(via.name, func(b *testing.B) {
			p := n.plane(via.id)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				id := ids.CommandID(fmt.Sprintf("%s-%d", via.name, i))
				if _, err := p.Execute(ctx, event.PlaceInstance{ID: id, Model: "stories260k"}); err != nil {
					b.Fatal(err)
				}
				// Keep the State small: the next placement is not charged for
				// the last one's memory.
				if _, err := p.Execute(ctx, event.DeleteInstance{ID: id + "-del", Instance: id.Instance()}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(2*b.N), "µs/decision")
		})
	}
}

// BenchmarkFailover times a new leader after the leader is killed, on
// three voters with raft's default timing (100 ms ticks, elections after
// 1-2 s without a leader).
func BenchmarkFailover(b *testing.B) {
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		nodes := []ids.NodeID{"node-a", "node-b", "node-c"}
		n := formed(b, nodes...)
		lead, _ := n.leader(nodes)
		var rest []ids.NodeID
		for _, id := range nodes {
			if id != lead {
				rest = append(rest, id)
			}
		}
		b.StartTimer()
		begin := time.Now()
		n.stop(lead)
		waitFor(b, 10*time.Second, "a new leader", func() bool { _, ok := n.leader(rest); return ok })
		total += time.Since(begin)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/failover")
}

// BenchmarkCatchUp times a node 10,000 entries behind catching up: it is
// stopped, the others commit 10,000 entries (the log is compacted behind
// snapshots meanwhile), and it restarts.
func BenchmarkCatchUp(b *testing.B) {
	const behind = 10000
	for b.Loop() {
		b.StopTimer()
		nodes := []ids.NodeID{"node-a", "node-b", "node-c"}
		n := formed(b, nodes...)
		lead, _ := n.leader(nodes)
		var late ids.NodeID
		for _, id := range nodes {
			if id != lead {
				late = id
				break
			}
		}
		n.stop(late)
		p := n.plane(lead)
		ctx := context.Background()
		for i := 0; i < behind/2; i++ {
			id := ids.CommandID(fmt.Sprintf("t-%d", i))
			if _, err := p.Execute(ctx, event.SetTracingEnabled{ID: id, Enabled: i%2 == 0}); err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; i < behind/2; i++ {
			id := ids.CommandID(fmt.Sprintf("u-%d", i))
			if _, err := p.Execute(ctx, event.SetTracingEnabled{ID: id, Enabled: i%2 == 1}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		n.start(late, false)
		waitFor(b, 60*time.Second, "the late node to catch up", func() bool { return converged(n, nodes) })
	}
}
