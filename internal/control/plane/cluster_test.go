package plane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/consensus"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/control/forward"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// net is an in-process network of planes: streams are net.Pipe pairs
// served by the same handlers the node serves on QUIC, and a partition
// closes them and refuses new ones. Everything above the byte stream is
// the real control plane: raft, its log on disk, forwarding.
type testNet struct {
	t     testing.TB
	mu    sync.Mutex
	nodes map[ids.NodeID]*testNode
	cut   map[[2]ids.NodeID]bool
	conns map[[2]ids.NodeID][]net.Conn
}

type testNode struct {
	id     ids.NodeID
	dir    string
	p      *Plane
	log    *eventlog.Log
	cancel context.CancelFunc
	done   chan struct{}
}

func newTestNet(t testing.TB) *testNet {
	return &testNet{t: t, nodes: map[ids.NodeID]*testNode{}, cut: map[[2]ids.NodeID]bool{}, conns: map[[2]ids.NodeID][]net.Conn{}}
}

func pair(a, b ids.NodeID) [2]ids.NodeID {
	if a > b {
		a, b = b, a
	}
	return [2]ids.NodeID{a, b}
}

// partition cuts every link between the two groups.
func (n *testNet) partition(a, b []ids.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range a {
		for _, y := range b {
			k := pair(x, y)
			n.cut[k] = true
			for _, c := range n.conns[k] {
				c.Close()
			}
			n.conns[k] = nil
		}
	}
}

func (n *testNet) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = map[[2]ids.NodeID]bool{}
}

func (n *testNet) dial(from, to ids.NodeID, serve func(tn *testNode, peer ids.NodeID, c net.Conn)) (net.Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	tn, ok := n.nodes[to]
	if !ok || tn.p == nil || n.cut[pair(from, to)] {
		return nil, fmt.Errorf("%s unreachable from %s", to, from)
	}
	a, b := net.Pipe()
	n.conns[pair(from, to)] = append(n.conns[pair(from, to)], a, b)
	go serve(tn, from, b)
	return a, nil
}

// peers is what gossip would show node from: the running nodes it is not
// cut from.
func (n *testNet) peers(from ids.NodeID) []Peer {
	n.mu.Lock()
	var out []Peer
	for id, tn := range n.nodes {
		if tn.p == nil || (id != from && n.cut[pair(from, id)]) {
			continue
		}
		out = append(out, Peer{Node: id, Gossip: "gossip-" + string(id), Known: true})
	}
	n.mu.Unlock()
	// What it announced: the cluster its log belongs to.
	for i := range out {
		if p := n.plane(out[i].Node); p != nil {
			out[i].Position = Position{Cluster: p.mach.current().Cluster, StartedAtUnixMs: p.StartedAt.UnixMilli()}
		}
	}
	return out
}

func testCard(t testing.TB) func(ids.ModelID) (catalog.Card, bool) {
	card, err := catalog.BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	return func(id ids.ModelID) (catalog.Card, bool) { return card, string(id) == card.ID }
}

// start runs (or restarts) a node; found makes it found the cluster.
func (n *testNet) start(id ids.NodeID, found bool) *testNode {
	n.t.Helper()
	n.mu.Lock()
	tn, ok := n.nodes[id]
	if !ok {
		tn = &testNode{id: id, dir: n.t.TempDir()}
		n.nodes[id] = tn
	}
	n.mu.Unlock()
	log, err := eventlog.Open(tn.dir, eventlog.Options{FreeSpaceFloor: eventlog.NoFloor, Sync: eventlog.SyncManual})
	if err != nil {
		n.t.Fatal(err)
	}
	p, err := New(Config{Node: id, Log: log, Logger: testLogger(n.t, id), Found: found, JoinWait: 300 * time.Millisecond, StartedAt: time.Now(), Card: testCard(n.t),
		Nodes: func() []placement.Node {
			var out []placement.Node
			for _, peer := range n.peers(id) {
				out = append(out, placement.Node{ID: string(peer.Node), TotalBytes: 64 << 30, AvailableBytes: 60 << 30, Backends: []string{"native-cpu"}, MaxInstances: 1000})
			}
			return out
		},
		MaxPerModel: 1000,
		Peers:       func() []Peer { return n.peers(id) },
		Dial: func(ctx context.Context, to ids.NodeID) (io.ReadWriteCloser, error) {
			return n.dial(id, to, func(tn *testNode, peer ids.NodeID, c net.Conn) {
				defer c.Close()
				forward.Serve(context.Background(), tn.p.AsLeader(), peer, c)
			})
		},
		RaftDial: func(ctx context.Context, to ids.NodeID) (io.WriteCloser, error) {
			return n.dial(id, to, func(tn *testNode, peer ids.NodeID, c net.Conn) {
				defer c.Close()
				consensus.Serve(context.Background(), tn.p.Raft(), consensus.RaftID(peer), c)
			})
		},
	})
	if err != nil {
		n.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tn.log, tn.cancel, tn.done = log, cancel, make(chan struct{})
	go func() { defer close(tn.done); p.Run(ctx) }()
	n.mu.Lock()
	tn.p = p
	n.mu.Unlock()
	n.t.Cleanup(func() { n.stop(id) })
	return tn
}

// stop kills a node (its log stays on disk).
func (n *testNet) stop(id ids.NodeID) {
	n.mu.Lock()
	tn := n.nodes[id]
	if tn == nil || tn.p == nil {
		n.mu.Unlock()
		return
	}
	tn.p = nil
	for k, cs := range n.conns {
		if k[0] == id || k[1] == id {
			for _, c := range cs {
				c.Close()
			}
			n.conns[k] = nil
		}
	}
	n.mu.Unlock()
	tn.cancel()
	<-tn.done
	tn.log.Close()
}

func (n *testNet) plane(id ids.NodeID) *Plane {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nodes[id].p
}

func testLogger(t testing.TB, id ids.NodeID) *slog.Logger {
	if os.Getenv("CONTROLPLANE_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", id)
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leader returns the running node that leads, if exactly one claims to.
func (n *testNet) leader(among []ids.NodeID) (ids.NodeID, bool) {
	var leaders []ids.NodeID
	for _, id := range among {
		if p := n.plane(id); p != nil && p.IsMaster() {
			leaders = append(leaders, id)
		}
	}
	if len(leaders) != 1 {
		return "", false
	}
	return leaders[0], true
}

func place(ctx context.Context, p *Plane, id string) error {
	_, err := p.Execute(ctx, event.PlaceInstance{ID: ids.CommandID(id), Model: catalog.BuiltinID})
	return err
}

// formed starts a cluster of the given nodes (the first founds it) and
// waits until every one votes.
func formed(t testing.TB, nodes ...ids.NodeID) *testNet {
	n := newTestNet(t)
	n.start(nodes[0], true)
	for _, id := range nodes[1:] {
		n.start(id, false)
	}
	want := desiredVoters(len(nodes))
	waitFor(t, 20*time.Second, "every node in the configuration", func() bool {
		l, ok := n.leader(nodes)
		if !ok {
			return false
		}
		st := n.plane(l).raft.Status()
		return len(st.Voters) == want && len(st.Voters)+len(st.Learners) == len(nodes)
	})
	return n
}

func hashes(n *testNet, nodes []ids.NodeID) map[[32]byte][]ids.NodeID {
	out := map[[32]byte][]ids.NodeID{}
	for _, id := range nodes {
		if p := n.plane(id); p != nil {
			st, _ := p.State(context.Background())
			h := state.Hash(st)
			out[h] = append(out[h], id)
		}
	}
	return out
}

func converged(n *testNet, nodes []ids.NodeID) bool {
	return len(hashes(n, nodes)) == 1
}

func TestJoinReplicateAndForward(t *testing.T) {
	nodes := []ids.NodeID{"node-a", "node-b", "node-c"}
	n := formed(t, nodes...)
	ctx := context.Background()
	// Every node decides: the followers forward to the leader.
	for i, id := range nodes {
		if err := place(ctx, n.plane(id), fmt.Sprintf("place-%d", i)); err != nil {
			t.Fatalf("place through %s: %v", id, err)
		}
	}
	waitFor(t, 5*time.Second, "every node to hold the same State", func() bool { return converged(n, nodes) })
	st, _ := n.plane("node-c").State(ctx)
	if len(st.Instances) != 3 {
		t.Fatalf("%d instances, want 3", len(st.Instances))
	}
}

// TestCutOffFollowerCannotUndo is the finding the consensus work fixes: a
// follower cut off alone refuses decisions (no_quorum, within 5 s), the
// majority decides, and on healing the majority's decision stands on
// every node.
func TestCutOffFollowerCannotUndo(t *testing.T) {
	nodes := []ids.NodeID{"node-a", "node-b", "node-c"}
	n := formed(t, nodes...)
	ctx := context.Background()
	lead, _ := n.leader(nodes)
	var lone ids.NodeID
	var rest []ids.NodeID
	for _, id := range nodes {
		if id != lead && lone == "" {
			lone = id
		} else {
			rest = append(rest, id)
		}
	}
	n.partition([]ids.NodeID{lone}, rest)
	time.Sleep(3 * time.Second) // long enough to elect itself, were it allowed
	begin := time.Now()
	err := place(ctx, n.plane(lone), "lone-place")
	if !errors.Is(err, ErrNoQuorum) || time.Since(begin) > 5*time.Second {
		t.Fatalf("the cut-off node answered %v after %v, want no_quorum within 5 s", err, time.Since(begin))
	}
	var ie *fault.Error
	if !errors.As(err, &ie) || ie.Code != "no_quorum" || ie.Class.HTTPStatus() != 503 {
		t.Fatalf("refusal %#v", ie)
	}
	if err := place(ctx, n.plane(rest[0]), "majority-place"); err != nil {
		t.Fatalf("the majority could not decide: %v", err)
	}
	n.heal()
	waitFor(t, 10*time.Second, "convergence after the heal", func() bool { return converged(n, nodes) })
	for _, id := range nodes {
		st, _ := n.plane(id).State(ctx)
		if _, ok := st.Instances["majority-place"]; !ok {
			t.Fatalf("%s lost the majority's placement", id)
		}
		if _, ok := st.Instances["lone-place"]; ok {
			t.Fatalf("%s holds the refused placement", id)
		}
	}
}

func TestLeaderKilledFailsOver(t *testing.T) {
	nodes := []ids.NodeID{"node-a", "node-b", "node-c"}
	n := formed(t, nodes...)
	lead, _ := n.leader(nodes)
	n.stop(lead)
	rest := slices.DeleteFunc(slices.Clone(nodes), func(id ids.NodeID) bool { return id == lead })
	begin := time.Now()
	waitFor(t, 5*time.Second, "a new leader", func() bool { _, ok := n.leader(rest); return ok })
	t.Logf("new leader after %v", time.Since(begin))
	if err := place(context.Background(), n.plane(rest[0]), "after-failover"); err != nil {
		t.Fatal(err)
	}
	// The killed node restarts and catches up.
	n.start(lead, false)
	waitFor(t, 10*time.Second, "the restarted node to catch up", func() bool { return converged(n, nodes) })
}

func TestTwoVotersRecover(t *testing.T) {
	nodes := []ids.NodeID{"node-a", "node-b"}
	n := formed(t, nodes...)
	ctx := context.Background()
	if err := place(ctx, n.plane("node-b"), "before"); err != nil {
		t.Fatal(err)
	}
	n.stop("node-a")
	p := n.plane("node-b")
	waitFor(t, 5*time.Second, "node-b to refuse", func() bool { return errors.Is(place(ctx, p, "refused"), ErrNoQuorum) })
	if err := place(ctx, p, "refused"); !errors.Is(err, ErrNoQuorum) {
		t.Fatalf("a lone voter of two decided: %v", err)
	}
	if err := p.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "node-b to lead alone", p.IsMaster)
	if err := place(ctx, p, "after-recover"); err != nil {
		t.Fatal(err)
	}
	st, _ := p.State(ctx)
	if _, ok := st.Instances["before"]; !ok {
		t.Fatal("recovery lost a committed placement")
	}
	// Recovery is refused while a majority is reachable.
	if err := p.Recover(ctx); !errors.Is(err, ErrMajorityReachable) {
		t.Fatalf("recover while leading: %v", err)
	}
}

// TestRestartFindsItself: every node of a cluster restarts, none with a
// flag to found anything, and they elect one leader and keep every
// decision.
func TestRestartFindsItself(t *testing.T) {
	nodes := []ids.NodeID{"node-a", "node-b", "node-c"}
	n := formed(t, nodes...)
	ctx := context.Background()
	if err := place(ctx, n.plane("node-b"), "kept"); err != nil {
		t.Fatal(err)
	}
	for _, id := range nodes {
		n.stop(id)
	}
	for _, id := range nodes {
		n.start(id, false)
	}
	waitFor(t, 10*time.Second, "one leader", func() bool { _, ok := n.leader(nodes); return ok })
	waitFor(t, 10*time.Second, "convergence", func() bool { return converged(n, nodes) })
	st, _ := n.plane("node-c").State(ctx)
	if _, ok := st.Instances["kept"]; !ok {
		t.Fatal("a decision was lost across the restart")
	}
	if err := place(ctx, n.plane("node-a"), "after"); err != nil {
		t.Fatal(err)
	}
}

// TestModelAddedThroughFollower: a card added through one follower is in
// every node's State once the call returns on it, places through another
// follower (no node's own catalog has it), and its removal is refused
// while placed and another card under its id is refused, each through a
// follower.
func TestModelAddedThroughFollower(t *testing.T) {
	nodes := []ids.NodeID{"node-a", "node-b", "node-c"}
	n := formed(t, nodes...)
	ctx := context.Background()
	lead, _ := n.leader(nodes)
	var followers []ids.NodeID
	for _, id := range nodes {
		if id != lead {
			followers = append(followers, id)
		}
	}
	c, err := catalog.BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	c.ID, c.Builtin = "org/shared", false
	card := c.Wire()
	if _, err := n.plane(followers[0]).Execute(ctx, event.AddModel{ID: "add-1", Card: card}); err != nil {
		t.Fatalf("add through %s: %v", followers[0], err)
	}
	if st, _ := n.plane(lead).State(ctx); !event.SameCard(st.Models[card.ID], card) {
		t.Fatalf("the leader's State after the acknowledged add: %+v", st.Models)
	}
	waitFor(t, 5*time.Second, "every node to hold the card", func() bool { return converged(n, nodes) })
	if _, err := n.plane(followers[1]).Execute(ctx, event.PlaceInstance{ID: "place-shared", Model: card.ID}); err != nil {
		t.Fatalf("place through %s: %v", followers[1], err)
	}
	other := card
	other.StorageBytes++
	for _, tc := range []struct {
		name string
		cmd  event.Command
	}{
		{"remove_while_placed", event.RemoveModel{ID: "rm-1", Model: card.ID}},
		{"another_card_under_the_id", event.AddModel{ID: "add-2", Card: other}},
	} {
		if _, err := n.plane(followers[1]).Execute(ctx, tc.cmd); fault.ClassOf(err) != fault.ClassConflict {
			t.Fatalf("%s: %v (class %s), want a conflict", tc.name, err, fault.ClassOf(err))
		}
	}
	if _, err := n.plane(followers[0]).Execute(ctx, event.DeleteInstance{ID: "del-1", Instance: "place-shared"}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.plane(followers[1]).Execute(ctx, event.RemoveModel{ID: "rm-2", Model: card.ID}); err != nil {
		t.Fatalf("remove once unplaced: %v", err)
	}
	waitFor(t, 5*time.Second, "every node to forget the card", func() bool { return converged(n, nodes) })
	if st, _ := n.plane(followers[0]).State(ctx); st.Models != nil {
		t.Fatalf("models after the removal: %+v", st.Models)
	}
}
