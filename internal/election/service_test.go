package election

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/membership"
)

// The election services of a test run in a synctest bubble: their ticker,
// the settle delay and the fakes below are all in it, so minutes of the
// election's time pass in microseconds, and "nothing happened by then" is
// an exact statement, not a guess.

const netVer = "skulk-net-test"

// fakeNet is the membership every node of a test shares: who is live, and
// the position each published. A fake of membership at the package
// boundary: membership itself gossips over real sockets, which a bubble
// cannot hold.
type fakeNet struct {
	mu        sync.Mutex
	live      map[ids.NodeID]membership.Member // guarded by mu
	positions map[ids.NodeID][]byte            // guarded by mu
	versions  map[ids.NodeID]uint64            // guarded by mu
	telemetry map[ids.NodeID]chan struct{}     // 1-buffered, per node
	changed   map[ids.NodeID]chan struct{}     // 1-buffered, per node: membership events
}

func newFakeNet() *fakeNet {
	return &fakeNet{live: map[ids.NodeID]membership.Member{}, positions: map[ids.NodeID][]byte{}, versions: map[ids.NodeID]uint64{},
		telemetry: map[ids.NodeID]chan struct{}{}, changed: map[ids.NodeID]chan struct{}{}}
}

// join makes node live with the given network version.
func (n *fakeNet) join(node ids.NodeID, version string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.live[node] = membership.Member{Node: node, Meta: membership.Meta{Node: node, NetworkVersion: version}}
	n.telemetry[node] = make(chan struct{}, 1)
	n.changed[node] = make(chan struct{}, 1)
	n.wakeLocked(n.changed)
}

// leave drops node and its readings, as membership does for a departed node.
func (n *fakeNet) leave(node ids.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.live, node)
	delete(n.positions, node)
	n.wakeLocked(n.changed)
}

func (n *fakeNet) publish(node ids.NodeID, pos []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.live[node]; !ok {
		return
	}
	n.positions[node] = pos
	n.versions[node]++
	n.wakeLocked(n.telemetry)
}

func (n *fakeNet) wakeLocked(chans map[ids.NodeID]chan struct{}) {
	for _, ch := range chans {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (n *fakeNet) position(node ids.NodeID) (Position, bool) {
	n.mu.Lock()
	b, ok := n.positions[node]
	n.mu.Unlock()
	if !ok {
		return Position{}, false
	}
	p, err := DecodePosition(b)
	return p, err == nil
}

// fakeMembers is one node's view of fakeNet (the service's Members).
type fakeMembers struct {
	net  *fakeNet
	self ids.NodeID
}

func (m fakeMembers) Members() []membership.Member {
	m.net.mu.Lock()
	defer m.net.mu.Unlock()
	var out []membership.Member
	for _, mb := range m.net.live {
		out = append(out, mb)
	}
	slices.SortFunc(out, func(a, b membership.Member) int { return cmpNode(a.Node, b.Node) })
	return out
}

func (m fakeMembers) Readings() []membership.Reading {
	m.net.mu.Lock()
	defer m.net.mu.Unlock()
	var out []membership.Reading
	for node, b := range m.net.positions {
		out = append(out, membership.Reading{Node: node, Key: PositionKey, Version: m.net.versions[node], Value: b})
	}
	return out
}

func (m fakeMembers) TelemetryChanged() <-chan struct{} {
	m.net.mu.Lock()
	defer m.net.mu.Unlock()
	return m.net.telemetry[m.self]
}

func (m fakeMembers) Publish(key string, value []byte) error {
	if key != PositionKey {
		return fmt.Errorf("unexpected key %q", key)
	}
	m.net.publish(m.self, value)
	return nil
}

func cmpNode(a, b ids.NodeID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fakeRoles is the node's role switchboard: it records each switch and
// moves the node's position as the real one does (a master's log enters
// its term; a follower catches up with its master's log at once).
type fakeRoles struct {
	net  *fakeNet
	self ids.NodeID

	mu    sync.Mutex
	pos   Position // guarded by mu
	calls []string // guarded by mu
}

func (r *fakeRoles) BecomeMaster(ctx context.Context, term ids.Term) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pos.Term, r.pos.MasterOf, r.pos.Master = term, term, r.self
	r.pos.Index++ // MasterElected
	r.calls = append(r.calls, fmt.Sprintf("master %d", term))
	return nil
}

func (r *fakeRoles) BecomeFollower(ctx context.Context, master ids.NodeID, fresh bool) error {
	mp, ok := r.net.position(master)
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.pos.Term, r.pos.Index = mp.Term, mp.Index
	}
	r.pos.MasterOf, r.pos.Master = 0, master
	call := "follow " + string(master)
	if fresh {
		call += " fresh"
	}
	r.calls = append(r.calls, call)
	return nil
}

func (r *fakeRoles) Position() Position {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pos
}

func (r *fakeRoles) history() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// peer is one node of a test: a live member that either runs an election
// service or, static, only shows a published position (or none).
type peer struct {
	id      ids.NodeID
	pos     Position
	version string // its network version; "" is netVer
	static  bool   // runs no service; publishes pos once
	silent  bool   // static and publishes nothing
}

// cluster runs the peers in the current bubble until ctx ends; roles holds
// the services' switchboards by node.
type cluster struct {
	net   *fakeNet
	roles map[ids.NodeID]*fakeRoles
	stops map[ids.NodeID]context.CancelFunc
	wg    sync.WaitGroup
}

func startCluster(ctx context.Context, peers []peer) *cluster {
	c := &cluster{net: newFakeNet(), roles: map[ids.NodeID]*fakeRoles{}, stops: map[ids.NodeID]context.CancelFunc{}}
	for _, p := range peers {
		v := p.version
		if v == "" {
			v = netVer
		}
		c.net.join(p.id, v)
		if p.static {
			if !p.silent {
				c.net.publish(p.id, p.pos.Encode())
			}
			continue
		}
		c.start(ctx, p)
	}
	return c
}

func (c *cluster) start(ctx context.Context, p peer) {
	r := &fakeRoles{net: c.net, self: p.id, pos: p.pos}
	c.roles[p.id] = r
	c.net.mu.Lock()
	changed := c.net.changed[p.id]
	c.net.mu.Unlock()
	s := New(Config{Self: p.id, Members: fakeMembers{c.net, p.id}, Roles: r, Changed: changed, NetworkVer: netVer})
	ctx, c.stops[p.id] = context.WithCancel(ctx)
	c.wg.Go(func() { s.Run(ctx) })
}

// leave stops node's service and drops it from the membership, as when its
// process stops.
func (c *cluster) leave(node ids.NodeID) {
	c.stops[node]()
	c.net.leave(node)
}

// calls returns every service's role switches so far.
func (c *cluster) calls() map[ids.NodeID][]string {
	out := map[ids.NodeID][]string{}
	for id, r := range c.roles {
		out[id] = r.history()
	}
	return out
}

func started(ms int64) Position { return Position{StartedAtUnixMs: ms} }

func at(term, index uint64, startedMs int64) Position {
	return Position{Term: ids.Term(term), Index: ids.Index(index), StartedAtUnixMs: startedMs}
}

func masterOf(term, index uint64, startedMs int64) Position {
	p := at(term, index, startedMs)
	p.MasterOf = ids.Term(term)
	return p
}

// TestServiceRoles: from one start, after the election has had time to
// settle (several settle periods), each service has switched roles exactly
// as the decide rules say, and no more.
func TestServiceRoles(t *testing.T) {
	tests := []struct {
		name  string
		peers []peer
		want  map[ids.NodeID][]string
	}{
		{"a_lone_node_elects_itself_in_term_1",
			[]peer{{id: "a", pos: started(10)}},
			map[ids.NodeID][]string{"a": {"master 1"}}},
		{"nodes_starting_together_follow_the_most_advanced_log",
			[]peer{{id: "a", pos: at(2, 5, 10)}, {id: "b", pos: at(2, 9, 30)}, {id: "c", pos: at(1, 50, 20)}},
			map[ids.NodeID][]string{"a": {"follow b"}, "b": {"master 3"}, "c": {"follow b"}}},
		{"then_the_longest_lived",
			[]peer{{id: "a", pos: at(2, 9, 30)}, {id: "b", pos: at(2, 9, 10)}},
			map[ids.NodeID][]string{"a": {"follow b"}, "b": {"master 3"}}},
		{"a_joiner_follows_the_live_master_whatever_its_log",
			[]peer{{id: "a", pos: masterOf(4, 10, 50), static: true}, {id: "d", pos: at(4, 99, 1)}},
			map[ids.NodeID][]string{"d": {"follow a"}}},
		{"a_deposed_master_steps_down_and_discards_its_tail",
			[]peer{{id: "a", pos: masterOf(3, 60, 1)}, {id: "b", pos: masterOf(4, 55, 10), static: true}},
			map[ids.NodeID][]string{"a": {"follow b fresh"}}},
		{"another_network_version_takes_no_part",
			[]peer{{id: "a", pos: at(1, 1, 50)}, {id: "x", pos: masterOf(9, 99, 1), version: "skulk-net-other", static: true}},
			map[ids.NodeID][]string{"a": {"master 2"}}},
		{"a_node_waits_for_the_one_that_should_elect_itself",
			[]peer{{id: "a", pos: at(5, 5, 1), static: true}, {id: "b", pos: at(1, 1, 2)}},
			map[ids.NodeID][]string{"b": nil}},
		{"a_member_without_a_position_holds_the_election",
			[]peer{{id: "a", pos: started(1)}, {id: "b", static: true, silent: true}},
			map[ids.NodeID][]string{"a": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				c := startCluster(ctx, tt.peers)
				time.Sleep(10 * time.Second) // the election's time: over six settle periods
				synctest.Wait()
				got := c.calls()
				cancel()
				c.wg.Wait()
				for id, want := range tt.want {
					if !slices.Equal(got[id], want) {
						t.Errorf("%s switched %q, want %q", id, got[id], want)
					}
				}
			})
		})
	}
}

// TestServiceSettlesBeforeElecting: a node that sees no master waits the
// settle period for peers before it claims the role, then claims it on the
// next tick.
func TestServiceSettlesBeforeElecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		c := startCluster(ctx, []peer{{id: "a", pos: started(1)}})
		time.Sleep(1500*time.Millisecond - time.Nanosecond) // the default settle period, less a nanosecond
		synctest.Wait()
		if got := c.roles["a"].history(); len(got) != 0 {
			t.Fatalf("switched %q before the settle period ended", got)
		}
		time.Sleep(200 * time.Millisecond) // one default tick
		synctest.Wait()
		if got := c.roles["a"].history(); !slices.Equal(got, []string{"master 1"}) {
			t.Fatalf("switched %q one tick after settling, want [master 1]", got)
		}
		cancel()
		c.wg.Wait()
	})
}

// TestServiceReElectsWhenTheMasterLeaves: three nodes elect one; when it
// leaves, the best of the other two elects itself in the next term and the
// last follows it; when a silent member publishes at last, the election it
// held goes on.
func TestServiceReElectsWhenTheMasterLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		c := startCluster(ctx, []peer{{id: "a", pos: started(1)}, {id: "b", pos: started(2)}, {id: "c", pos: started(3)}})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		want := map[ids.NodeID][]string{"a": {"master 1"}, "b": {"follow a"}, "c": {"follow a"}}
		check := func(when string) {
			t.Helper()
			got := c.calls()
			for id, w := range want {
				if !slices.Equal(got[id], w) {
					t.Fatalf("%s: %s switched %q, want %q", when, id, got[id], w)
				}
			}
		}
		check("first election")

		// a leaves. b and c hold a's log up to term 1 and started in that
		// order: b elects itself in term 2 and c follows it. No settle
		// delay: the settle period counts from the service's start.
		c.leave("a")
		time.Sleep(time.Second)
		synctest.Wait()
		want["b"] = append(want["b"], "master 2")
		want["c"] = append(want["c"], "follow b")
		check("after a left")

		// d joins with a longer log but no position yet: nothing changes
		// while it is silent, and once it publishes it follows b, which
		// keeps the role (no change when nodes join).
		c.net.join("d", netVer)
		time.Sleep(time.Second)
		synctest.Wait()
		check("while d is silent")
		c.start(ctx, peer{id: "d", pos: at(2, 99, 0)})
		time.Sleep(time.Second)
		synctest.Wait()
		want["d"] = []string{"follow b"}
		check("after d published")
		if p, _ := c.net.position("b"); p.MasterOf != 2 || p.Term != 2 {
			t.Fatalf("b publishes %+v, want master of term 2", p)
		}
		cancel()
		c.wg.Wait()
	})
}
