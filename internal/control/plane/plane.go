// Package plane is one node's part in the control plane: a member of
// the cluster's Raft group (internal/control/consensus) whose log holds the
// control-plane events. Every node applies the committed log to its State
// (machine.go) and serves it to its worker, gateway and API. The Raft
// leader is the master: while this node leads, a master.Master decides
// commands and workers' reports and proposes them; other nodes forward
// theirs to the leader. A change is acknowledged only once a majority of
// voters holds it; a side of a partition without a majority refuses
// changes (no_quorum) and keeps serving what is placed.
//
// The leader also keeps the voters right (voters.go): joining nodes
// become learners, learners become voters up to five, a voter gone past a
// timeout is replaced.
package plane

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/consensus"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/control/master"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Config is what a Plane needs. Dial, RaftDial, Peers and OnMaster may be
// set after New, before Run.
type Config struct {
	Node ids.NodeID
	// Log is the raft log's store.
	Log  *eventlog.Log
	Card func(ids.ModelID) (catalog.Card, bool)
	// Nodes reports the live nodes' resources, for placement.
	Nodes func() []placement.Node
	// Dial opens a control stream to another node (forwarded commands).
	Dial func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error)
	// RaftDial opens a stream for raft messages to another node.
	RaftDial func(ctx context.Context, node ids.NodeID) (io.WriteCloser, error)
	// Peers lists the live members and what they announced.
	Peers    func() []Peer
	OnMaster func(ctx context.Context, m *master.Master) // duties only a master has, for one leadership
	// Found says this node founded its cluster (it generated the cluster
	// key): a fresh log bootstraps at once. Otherwise a fresh node looks for
	// a cluster for JoinWait, then the lowest fresh node id founds one.
	Found    bool
	JoinWait time.Duration
	// Bootstrapping says this node was given peers to join (--bootstrap-
	// peers, an invite): while it sees no other member it keeps looking
	// for them for JoinPatience before founding a cluster of its own, so
	// nodes started together join one cluster instead of founding two.
	Bootstrapping bool
	JoinPatience  time.Duration
	// VoterTimeout is how long a voter may be gone before it is replaced.
	VoterTimeout time.Duration
	// CommitTimeout bounds the wait for a proposal to commit (5 s).
	CommitTimeout time.Duration
	// Tick and ElectionTicks set raft's clock (consensus defaults).
	Tick          time.Duration
	ElectionTicks int
	StartedAt     time.Time
	Version       string
	Commit        string
	Logger        *slog.Logger
	// MaxPerModel is this node's --max-instances-per-model, applied while
	// it is master.
	MaxPerModel int
	// Initial, when set on a fresh log, is the State the cluster this node
	// founds starts from (an upgraded home's history).
	Initial *state.State
	// OnLeader, when set, hears each change of the leader this node knows
	// (empty while none), with the term; for the node's timeline.
	OnLeader func(leader ids.NodeID, term uint64)
	// UnsafeAckBeforeCommit breaks the commit rule on purpose: a leader
	// acknowledges a decision as soon as raft takes it, without a quorum.
	// It exists only so the partition test can show that its checker
	// catches a lost acknowledged decision (SKULK_TEST_UNSAFE_ACK=1).
	UnsafeAckBeforeCommit bool
}

// Peer is a live member as gossip shows it.
type Peer struct {
	Node   ids.NodeID
	Gossip string
	// Position is what it announced; Known says it arrived.
	Position Position
	Known    bool
}

// Defaults.
const (
	DefaultJoinWait      = 2 * time.Second
	DefaultJoinPatience  = 15 * time.Second
	DefaultCommitTimeout = 5 * time.Second
)

// Plane is this node's control plane. Its methods are safe for concurrent
// use.
type Plane struct {
	Config
	raft   *consensus.Node
	mach   *machine
	sender *consensus.Sender

	lead atomic.Pointer[leadership]
	// settled is closed once this process's State is current: it leads and
	// its master settled, or it follows a leader and applied what that
	// leader had committed. Reads wait for it briefly, so a restarted node
	// does not serve the runners of its previous process as ready.
	settled     chan struct{}
	settledOnce sync.Once
	// held is set (by the duty loop) once this process took any part: led,
	// or followed another leader. A first leadership before that is a
	// restart, whose master stops the node's runners of the previous
	// process; after it, the node's own worker did that already.
	held bool

	mu        sync.Mutex // guards goneSince
	goneSince map[uint64]time.Time
}

// leadership is one term of this node as master.
type leadership struct {
	term   uint64
	master *master.Master
	cancel context.CancelFunc
	done   chan struct{}
}

// New opens the raft log and returns the Plane; Run starts it.
func New(cfg Config) (*Plane, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.JoinWait <= 0 {
		cfg.JoinWait = DefaultJoinWait
	}
	if cfg.JoinPatience <= 0 {
		cfg.JoinPatience = DefaultJoinPatience
	}
	if cfg.VoterTimeout <= 0 {
		cfg.VoterTimeout = DefaultVoterTimeout
	}
	if cfg.CommitTimeout <= 0 {
		cfg.CommitTimeout = DefaultCommitTimeout
	}
	p := &Plane{Config: cfg, mach: newMachine(cfg.Logger), goneSince: map[uint64]time.Time{}, settled: make(chan struct{})}
	p.sender = &consensus.Sender{Dial: p.dialRaft, Logger: cfg.Logger.With("component", "raft")}
	n, err := consensus.Open(consensus.Config{ID: consensus.RaftID(cfg.Node), Log: cfg.Log, Machine: p.mach,
		Send: p.sender.Send, Tick: cfg.Tick, ElectionTicks: cfg.ElectionTicks, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("controlplane: open the raft log: %w", err)
	}
	p.raft, p.sender.Node = n, n
	return p, nil
}

// Raft is the consensus node, for the transport's inbound streams.
func (p *Plane) Raft() *consensus.Node { return p.raft }

// Run drives the plane until ctx ends.
func (p *Plane) Run(ctx context.Context) error {
	p.sender.Start(ctx)
	defer p.sender.Close()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { p.raft.Run(rctx) })
	defer wg.Wait()
	defer p.stopLeading()
	defer p.mach.closeSubscribers()
	if st := p.raft.Status(); len(st.Voters) == 1 && st.Voters[0] == st.ID {
		// The only voter need not wait out an election timeout.
		if err := p.raft.Campaign(ctx); err != nil {
			p.Logger.Debug("campaign", "err", err)
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastConf time.Time
	var lastLead uint64
	warned := map[ids.NodeID]string{} // foreign members already warned of, with their cluster
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			st := p.raft.Status()
			if p.raft.Fresh() {
				p.maybeFound(ctx, now)
				continue
			}
			p.follow(ctx, st)
			for _, f := range p.foreign(p.mach.current().Cluster) {
				if warned[f.Node] != f.Cluster {
					warned[f.Node] = f.Cluster
					p.Logger.Warn("a member gossips with this cluster but its log belongs to another; the two never merge: "+
						"stop that node, move its home aside and start it again to join this cluster", "member", f.Node, "its_cluster", f.Cluster, "gossip", f.Gossip)
				}
			}
			if st.Lead != lastLead {
				lastLead = st.Lead
				if p.OnLeader != nil {
					leader, _ := p.nodeOf(st.Lead)
					p.OnLeader(leader, st.Term)
				}
			}
			if st.Lead != 0 && st.Lead != st.ID {
				p.held = true
				if st.Applied >= st.Commit {
					p.settle()
				}
			}
			if l := p.lead.Load(); l != nil {
				select {
				case <-l.master.Ready():
					p.settle()
				default:
				}
			}
			if st.Leader && now.Sub(lastConf) >= 300*time.Millisecond {
				lastConf = now
				p.membershipDuty(ctx, st, now)
			}
		}
	}
}

// maybeFound bootstraps a fresh log into a new cluster when this node
// founded it, or when no cluster showed up within JoinWait and this node
// has the lowest id of the fresh nodes it sees (a node given peers to join
// that sees none waits JoinPatience).
func (p *Plane) maybeFound(ctx context.Context, now time.Time) {
	if !p.Found {
		if now.Sub(p.StartedAt) < p.JoinWait {
			return
		}
		alone := true
		for _, peer := range p.peers() {
			if peer.Node == p.Node {
				continue
			}
			alone = false
			if !peer.Known || peer.Position.Cluster != "" || peer.Node < p.Node {
				return // a cluster to join, or a fresh node that founds it
			}
		}
		if alone && p.Bootstrapping && now.Sub(p.StartedAt) < p.JoinPatience {
			return // the peers it was given may still be starting
		}
	}
	cluster := randomID()
	st := state.State{}
	if p.Initial != nil {
		st = *p.Initial
	}
	data, err := encodeMachine(cluster, st, map[uint64]Member{consensus.RaftID(p.Node): {Node: p.Node}})
	if err == nil {
		err = p.raft.Bootstrap(ctx, data)
	}
	if err != nil && !errors.Is(err, consensus.ErrNotFresh) {
		p.Logger.Error("cannot found a cluster", "err", err)
		return
	}
	p.Logger.Info("founded a new cluster", "cluster", cluster)
}

// follow starts a master when this node leads and stops it when it no
// longer does.
func (p *Plane) follow(ctx context.Context, st consensus.Status) {
	l := p.lead.Load()
	switch {
	case st.Leader && (l == nil || l.term != st.Term):
		p.stopLeading()
		p.startLeading(ctx, st.Term)
	case !st.Leader && l != nil:
		p.stopLeading()
	case l != nil:
		select {
		case <-l.done: // the master gave up (its election did not commit)
			p.lead.Store(nil)
		default:
		}
	}
}

func (p *Plane) startLeading(ctx context.Context, term uint64) {
	restarted := !p.held
	p.held = true
	m := master.New(master.Config{Node: p.Node, Propose: p.propose, Applied: func() state.State { return p.mach.current().State },
		Term: ids.Term(term), Restarted: restarted, Now: time.Now, Card: p.Card, Nodes: p.Nodes,
		MaxInstancesPerModel: p.MaxPerModel, Logger: p.Logger.With("component", "master")})
	lctx, cancel := context.WithCancel(ctx)
	l := &leadership{term: term, master: m, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := m.Run(lctx); err != nil {
			p.Logger.Warn("master stopped", "term", term, "err", err)
		}
	})
	if p.OnMaster != nil {
		wg.Go(func() { p.OnMaster(lctx, m) })
	}
	go func() { wg.Wait(); close(l.done) }()
	p.lead.Store(l)
	p.Logger.Info("leading the cluster", "term", term)
}

func (p *Plane) stopLeading() {
	if l := p.lead.Swap(nil); l != nil {
		l.cancel()
		<-l.done
		p.Logger.Info("no longer leading", "term", l.term)
	}
}

// Stop is a no-op kept for the node's close order: Run's context stops
// the plane.
func (p *Plane) Stop() {}

// propose is the master's path into the log: refused at once without a
// quorum (certainly not in the log), else appended and awaited.
func (p *Plane) propose(ctx context.Context, evs []event.Event) ([]event.IndexedEvent, error) {
	if p.UnsafeAckBeforeCommit {
		return p.proposeUnsafe(ctx, evs)
	}
	if st := p.raft.Status(); st.LogDegraded != "" {
		return nil, &fault.Error{Class: fault.ClassUnavailable, Code: "log_not_writing",
			Message: fmt.Sprintf("this node's log stopped writing (%s), so it decides nothing it could not keep; nothing was changed: free disk space and it writes again by itself", st.LogDegraded)}
	}
	if err := p.awaitQuorum(ctx); err != nil {
		return nil, err
	}
	b, data, err := encodeBatch(evs)
	if err != nil {
		return nil, err
	}
	ch := p.mach.wait(b.ID)
	if err := p.raft.Propose(ctx, data); err != nil {
		p.mach.forget(b.ID)
		if errors.Is(err, consensus.ErrProposalDropped) {
			return nil, p.noQuorum()
		}
		var halted *consensus.ErrHalted
		if errors.As(err, &halted) {
			return nil, &fault.Error{Class: fault.ClassUnavailable, Code: "log_not_writing", Message: halted.Error()}
		}
		return nil, err
	}
	t := time.NewTimer(p.CommitTimeout)
	defer t.Stop()
	select {
	case a := <-ch:
		return a.events, a.err
	case <-t.C:
	case <-ctx.Done():
	}
	p.mach.forget(b.ID)
	return nil, &fault.Error{Class: fault.ClassUnavailable, Code: "commit_unknown",
		Message: fmt.Sprintf("the decision was proposed but not committed within %v (the leader lost its majority or stepped down); it may still take effect: check the cluster's state before retrying", p.CommitTimeout)}
}

// encodeBatch is evs as one raft entry, under a fresh proposal id.
func encodeBatch(evs []event.Event) (batch, []byte, error) {
	b := batch{ID: randomUint64()}
	for _, ev := range evs {
		e, err := event.EncodeEvent(ev)
		if err != nil {
			return b, nil, err
		}
		b.Events = append(b.Events, e)
	}
	data, err := cbor.Marshal(b)
	return b, data, err
}

// proposeUnsafe is propose with the commit rule broken
// (UnsafeAckBeforeCommit): the events are acknowledged as raft takes them.
func (p *Plane) proposeUnsafe(ctx context.Context, evs []event.Event) ([]event.IndexedEvent, error) {
	b, data, err := encodeBatch(evs)
	if err != nil {
		return nil, err
	}
	ch := p.mach.wait(b.ID)
	if err := p.raft.Propose(ctx, data); err != nil {
		p.mach.forget(b.ID)
		return nil, p.noQuorum()
	}
	if first := evs[0]; len(evs) == 1 {
		if _, ok := first.(event.MasterElected); ok {
			select { // the master's own start waits, or it decides on nothing
			case a := <-ch:
				return a.events, a.err
			case <-ctx.Done():
				p.mach.forget(b.ID)
				return nil, ctx.Err()
			}
		}
	}
	p.mach.forget(b.ID)
	st := p.mach.current().State
	out := make([]event.IndexedEvent, len(evs))
	for i, ev := range evs {
		out[i] = event.IndexedEvent{Term: st.Term, Index: st.LastIndex + ids.Index(i+1), Event: ev}
	}
	return out, nil
}

// awaitQuorum waits up to one election timeout for a majority of voters
// to be in touch with this leader (just after an election they have not
// answered yet); then refuses with no_quorum.
func (p *Plane) awaitQuorum(ctx context.Context) error {
	deadline := time.Now().Add(time.Second)
	for {
		st := p.raft.Status()
		if !st.Leader {
			return p.noQuorum()
		}
		active := 0
		for _, id := range st.Voters {
			if pr, ok := st.Progress[id]; ok && pr.RecentActive {
				active++
			}
		}
		if active > len(st.Voters)/2 {
			return nil
		}
		if time.Now().After(deadline) {
			return p.noQuorum()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ErrNoQuorum is matched by every no_quorum refusal.
var ErrNoQuorum = errors.New("no quorum")

// noQuorum is the refusal of a node that cannot reach a majority of voters:
// nothing was proposed.
func (p *Plane) noQuorum() error {
	reach, total := p.reachableVoters()
	return &quorumError{reach: reach, total: total}
}

type quorumError struct{ reach, total int }

func (e *quorumError) Error() string {
	if e.total == 0 {
		return "no quorum: this node has not joined a cluster yet; retry in a moment"
	}
	if e.reach > e.total/2 {
		return fmt.Sprintf("no quorum: no leader is reachable from this node (gossip shows %d of %d voters, which may be stale); "+
			"an election may be under way: retry in a moment; nothing was changed", e.reach, e.total)
	}
	return fmt.Sprintf("no quorum: this node reaches %d of %d voters and a decision needs %d; nothing was changed. "+
		"Placed instances keep serving; retry when the others are back, or run `skulk cluster recover` on a survivor if they are gone for good",
		e.reach, e.total, e.total/2+1)
}
func (e *quorumError) Is(target error) bool { return target == ErrNoQuorum }
func (e *quorumError) Unwrap() error {
	return &fault.Error{Class: fault.ClassUnavailable, Code: "no_quorum", Message: e.Error()}
}

// reachableVoters counts the voters gossip shows alive, this node included.
func (p *Plane) reachableVoters() (reach, total int) {
	st := p.raft.Status()
	alive := map[uint64]bool{consensus.RaftID(p.Node): true}
	for _, peer := range p.peers() {
		alive[consensus.RaftID(peer.Node)] = true
	}
	for _, id := range st.Voters {
		if alive[id] {
			reach++
		}
	}
	return reach, len(st.Voters)
}

func (p *Plane) peers() []Peer {
	if p.Peers == nil {
		return nil
	}
	return p.Peers()
}

// membershipDuty proposes the configuration change planConf calls for.
func (p *Plane) membershipDuty(ctx context.Context, st consensus.Status, now time.Time) {
	v := p.mach.current()
	peers := map[uint64]Peer{}
	for _, peer := range p.peers() {
		peers[consensus.RaftID(peer.Node)] = peer
	}
	p.mu.Lock()
	var cands []candidate
	seen := map[uint64]bool{}
	add := func(id uint64, node ids.NodeID, gossip string) {
		if seen[id] {
			return
		}
		seen[id] = true
		peer, alive := peers[id]
		if id == st.ID {
			alive = true
		}
		c := candidate{Raft: id, Node: node, Gossip: gossip, Alive: alive, Match: st.Progress[id].Match}
		if alive {
			delete(p.goneSince, id)
			c.StartedAt = peer.Position.StartedAtUnixMs
			if id == st.ID {
				c.StartedAt = p.StartedAt.UnixMilli()
			}
			c.Joinable = peer.Known && (peer.Position.Cluster == "" || peer.Position.Cluster == v.Cluster)
		} else {
			if _, ok := p.goneSince[id]; !ok {
				p.goneSince[id] = now
			}
			c.GoneFor = now.Sub(p.goneSince[id])
		}
		cands = append(cands, c)
	}
	for id, peer := range peers {
		add(id, peer.Node, peer.Gossip)
	}
	for _, id := range append(append([]uint64{}, st.Voters...), st.Learners...) {
		add(id, v.Members[id].Node, v.Members[id].Gossip)
	}
	p.mu.Unlock()
	cc := planConf(confView{Self: st.ID, Voters: st.Voters, Learners: st.Learners, Commit: st.Commit}, cands, p.VoterTimeout)
	if cc == nil {
		if len(st.Learners) > 0 {
			p.Logger.Debug("voters unchanged", "voters", len(st.Voters), "learners", len(st.Learners), "commit", st.Commit, "candidates", fmt.Sprintf("%+v", cands))
		}
		return
	}
	p.Logger.Info("changing the voters", "change", cc.GetType().String(), "node", fmt.Sprintf("%x", cc.GetNodeId()))
	if err := p.raft.ProposeConfChange(ctx, cc); err != nil {
		p.Logger.Debug("configuration change not taken", "err", err)
	}
}

// dialRaft opens a raft stream to the node behind a raft id.
func (p *Plane) dialRaft(ctx context.Context, to uint64) (io.WriteCloser, error) {
	node, ok := p.nodeOf(to)
	if !ok {
		return nil, fmt.Errorf("controlplane: no member with raft id %x", to)
	}
	if p.RaftDial == nil {
		return nil, errors.New("controlplane: no raft transport yet")
	}
	return p.RaftDial(ctx, node)
}

// nodeOf maps a raft id to a node: the replicated member list, else the
// live members (a learner answers its leader before it knows the list).
func (p *Plane) nodeOf(id uint64) (ids.NodeID, bool) {
	if m, ok := p.mach.current().Members[id]; ok && m.Node != "" {
		return m.Node, true
	}
	for _, peer := range p.peers() {
		if consensus.RaftID(peer.Node) == id {
			return peer.Node, true
		}
	}
	return "", false
}

// Waits for a leader before giving up with no_quorum: an election takes
// one to two seconds, and a caller should not see one that ends within
// the wait. An API call still answers within 5 s; a worker's report, which
// nobody waits on, tries for longer.
const (
	executeLeaderWait = 2500 * time.Millisecond
	reportLeaderWait  = 30 * time.Second
)

// Execute decides a command: on the master when this node leads, else on
// the leader it follows.
func (p *Plane) Execute(ctx context.Context, cmd event.Command) (out []event.IndexedEvent, err error) {
	err = p.retryNoQuorum(ctx, executeLeaderWait, func() error {
		out, err = p.execute(ctx, cmd)
		return err
	})
	return out, err
}

// retryNoQuorum calls f until it succeeds, fails otherwise than no_quorum,
// or wait passes.
func (p *Plane) retryNoQuorum(ctx context.Context, wait time.Duration, f func() error) error {
	deadline := time.Now().Add(wait)
	for {
		err := f()
		if !errors.Is(err, ErrNoQuorum) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *Plane) execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error) {
	if l := p.lead.Load(); l != nil {
		out, err := l.master.Execute(ctx, cmd)
		if errors.Is(err, master.ErrStopped) {
			return nil, p.noQuorum()
		}
		return out, err
	}
	leader, err := p.leaderNode()
	if err != nil {
		return nil, err
	}
	return p.forwardCommand(ctx, leader, cmd)
}

// Report submits a worker's local fact, as Execute does a command.
func (p *Plane) Report(ctx context.Context, src event.Source, ev event.Event) error {
	return p.retryNoQuorum(ctx, reportLeaderWait, func() error { return p.report(ctx, src, ev) })
}

func (p *Plane) report(ctx context.Context, src event.Source, ev event.Event) error {
	if l := p.lead.Load(); l != nil {
		err := l.master.Report(ctx, src, ev)
		if errors.Is(err, master.ErrStopped) {
			return p.noQuorum()
		}
		return err
	}
	leader, err := p.leaderNode()
	if err != nil {
		return err
	}
	return p.forwardReport(ctx, leader, ev)
}

func (p *Plane) leaderNode() (ids.NodeID, error) {
	st := p.raft.Status()
	if st.Halted != "" {
		return "", &fault.Error{Class: fault.ClassUnavailable, Code: "log_not_writing", Message: "this node's log stopped writing, so it takes no part in decisions: " + st.Halted}
	}
	if st.Lead == 0 {
		return "", p.noQuorum()
	}
	node, ok := p.nodeOf(st.Lead)
	if !ok || node == p.Node || p.Dial == nil {
		return "", p.noQuorum()
	}
	return node, nil
}

func (p *Plane) settle() { p.settledOnce.Do(func() { close(p.settled) }) }

// settleWait bounds how long a read waits for the node to settle after it
// started; a node that cannot reach its cluster serves what it has.
const settleWait = 3 * time.Second

// State returns the committed State as this node has applied it.
func (p *Plane) State(ctx context.Context) (state.State, error) {
	if time.Since(p.StartedAt) < settleWait {
		t := time.NewTimer(settleWait - time.Since(p.StartedAt))
		defer t.Stop()
		select {
		case <-p.settled:
		case <-t.C:
		case <-ctx.Done():
			return state.State{}, ctx.Err()
		}
	}
	return p.mach.current().State, nil
}

// Subscribe returns the events after `after`, then live ones; the channel
// closes when the subscriber should start over from State.
func (p *Plane) Subscribe(ctx context.Context, after ids.Index) (<-chan event.IndexedEvent, error) {
	return p.mach.subscribe(after), nil
}

// IsMaster reports whether this node leads now.
func (p *Plane) IsMaster() bool { return p.lead.Load() != nil }

// Leader returns the node this node knows leads.
func (p *Plane) Leader() ids.NodeID {
	st := p.raft.Status()
	if st.Lead == 0 {
		return ""
	}
	node, _ := p.nodeOf(st.Lead)
	return node
}

// Position reports this node's log position for diagnostics.
func (p *Plane) Position() Position {
	v := p.mach.current()
	st := p.raft.Status()
	h := state.Hash(v.State)
	pos := Position{Term: v.State.Term, Index: v.State.LastIndex, Master: p.Leader(), StartedAtUnixMs: p.StartedAt.UnixMilli(),
		StateHash: fmt.Sprintf("%x", h[:]), Version: p.Version, Commit: p.Commit, Cluster: v.Cluster, RaftCommit: st.Commit, Halted: st.Halted}
	if p.IsMaster() {
		pos.MasterOf = ids.Term(st.Term)
	}
	for _, id := range st.Voters {
		if id == st.ID {
			pos.Voter = true
		}
	}
	return pos
}

// Consensus is the raft view GET /v1/diagnostics/cluster shows.
type Consensus struct {
	Cluster string       `json:"cluster"`
	Term    uint64       `json:"term"`
	Leader  ids.NodeID   `json:"leader"`
	Commit  uint64       `json:"commitIndex"`
	Applied uint64       `json:"appliedIndex"`
	Members []RaftMember `json:"members"`
	Halted  string       `json:"halted,omitempty"`
	// Foreign are the gossip members whose log belongs to another cluster:
	// nodes that share the cluster key but founded (or joined) a cluster
	// of their own. Raft never merges two clusters; each such node serves
	// apart until it is restarted with an empty home.
	Foreign []ForeignMember `json:"foreign,omitempty"`
}

// ForeignMember is a member of another cluster that gossips with this one.
type ForeignMember struct {
	Node    ids.NodeID `json:"nodeId"`
	Cluster string     `json:"cluster"`
	Gossip  string     `json:"gossipAddr,omitempty"`
}

// foreign lists the live members whose log names a cluster other than
// ours (none while this node has no cluster yet).
func (p *Plane) foreign(ours string) []ForeignMember {
	if ours == "" {
		return nil
	}
	var out []ForeignMember
	for _, peer := range p.peers() {
		if peer.Node != p.Node && peer.Known && peer.Position.Cluster != "" && peer.Position.Cluster != ours {
			out = append(out, ForeignMember{Node: peer.Node, Cluster: peer.Position.Cluster, Gossip: peer.Gossip})
		}
	}
	slices.SortFunc(out, func(a, b ForeignMember) int { return strings.Compare(string(a.Node), string(b.Node)) })
	return out
}

// RaftMember is one member of the configuration.
type RaftMember struct {
	Node  ids.NodeID `json:"nodeId"`
	Voter bool       `json:"voter"`
	// Match is the index the leader knows it holds (only the leader knows;
	// absent elsewhere).
	Match        *uint64 `json:"matchIndex,omitempty"`
	RecentActive *bool   `json:"recentActive,omitempty"`
}

// ConsensusStatus reports the raft view.
func (p *Plane) ConsensusStatus() Consensus {
	st := p.raft.Status()
	v := p.mach.current()
	c := Consensus{Cluster: v.Cluster, Term: st.Term, Leader: p.Leader(), Commit: st.Commit, Applied: st.Applied, Halted: st.Halted, Members: []RaftMember{},
		Foreign: p.foreign(v.Cluster)}
	add := func(id uint64, voter bool) {
		node, ok := p.nodeOf(id)
		if !ok {
			node = ids.NodeID(fmt.Sprintf("raft:%x", id))
		}
		m := RaftMember{Node: node, Voter: voter}
		if pr, ok := st.Progress[id]; ok {
			m.Match, m.RecentActive = &pr.Match, &pr.RecentActive
		}
		c.Members = append(c.Members, m)
	}
	for _, id := range st.Voters {
		add(id, true)
	}
	for _, id := range st.Learners {
		add(id, false)
	}
	return c
}

// KnownMembers lists the members the replicated configuration names, with
// their gossip addresses: a restarted node dials them.
func (p *Plane) KnownMembers() []Member {
	var out []Member
	for _, m := range p.mach.current().Members {
		if m.Node != p.Node {
			out = append(out, m)
		}
	}
	return out
}

// ErrMajorityReachable refuses a recovery while the cluster can decide.
var ErrMajorityReachable = errors.New("controlplane: a majority of voters is reachable")

// Recover makes this node the only voter, for when the other voters are
// gone for good. Refused while a majority is reachable or a leader leads.
func (p *Plane) Recover(ctx context.Context) error {
	st := p.raft.Status()
	reach, total := p.reachableVoters()
	if st.Leader || reach > total/2 {
		return fmt.Errorf("%w (%d of %d voters reachable): the cluster can decide, so there is nothing to recover", ErrMajorityReachable, reach, total)
	}
	p.Logger.Warn("recovering: this node becomes the only voter; decisions the others made and this node never saw are lost",
		"voters_reachable", reach, "voters", total)
	return p.raft.ForceSingleVoter(ctx)
}

func randomUint64() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:]) | 1
}

func randomID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var _ consensus.StateMachine = (*machine)(nil)
var _ = pb.EntryNormal
