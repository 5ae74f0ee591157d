package consensus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/skulk/skulk/internal/control/eventlog"
)

// StateMachine is what the log is a log of. The driver calls it from its
// own goroutine only, in log order.
type StateMachine interface {
	// Apply applies a committed entry's data (empty entries are skipped).
	Apply(index, term uint64, data []byte)
	// ConfChanged applies a committed configuration change; cs is the
	// configuration after it.
	ConfChanged(index uint64, cc *pb.ConfChange, cs *pb.ConfState)
	// Restore replaces the machine by a snapshot's data.
	Restore(index, term uint64, cs *pb.ConfState, data []byte) error
	// Snapshot encodes the machine as of the last entry applied.
	Snapshot() ([]byte, error)
}

// Config wires a Node.
type Config struct {
	ID      uint64
	Log     *eventlog.Log
	Machine StateMachine
	// Send hands messages to the transport; it must not block.
	Send func(msgs []*pb.Message)
	// Tick is raft's clock (default 100 ms); an election follows
	// ElectionTicks..2*ElectionTicks ticks without a leader (default 10:
	// 1-2 s on a LAN); the leader heartbeats every tick.
	Tick          time.Duration
	ElectionTicks int
	// SnapshotEvery compacts the log after this many applied entries
	// (default 1024).
	SnapshotEvery uint64
	// HealEvery is how often a node whose log stopped writing checks
	// whether it writes again (default 2 s).
	HealEvery time.Duration
	Logger    *slog.Logger
}

// Defaults.
const (
	DefaultTick          = 100 * time.Millisecond
	DefaultElectionTicks = 10
	DefaultSnapshotEvery = 1024
)

// Node drives one raft member. Its methods are safe for concurrent use.
type Node struct {
	cfg     Config
	disk    *disk
	rn      *raft.RawNode // owned by Run's goroutine; nil while halted
	cs      *pb.ConfState
	snapAt  uint64 // the index of the newest snapshot
	applied uint64
	halted  error // why the node takes no part (its log stopped writing)
	// compactNow asks for a snapshot after the current Ready.
	compactNow bool

	reqs   chan func()
	status atomic.Pointer[Status]
	done   chan struct{}
}

// Errors callers branch on.
var (
	// ErrNotFresh: Bootstrap on a node that already has a log.
	ErrNotFresh = errors.New("consensus: this node already belongs to a cluster")
	// ErrStopped: the node stopped.
	ErrStopped = errors.New("consensus: stopped")
)

// Open restores a node from its log; the machine gets the newest snapshot.
func Open(cfg Config) (*Node, error) {
	if cfg.Tick <= 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.ElectionTicks <= 0 {
		cfg.ElectionTicks = DefaultElectionTicks
	}
	if cfg.SnapshotEvery == 0 {
		cfg.SnapshotEvery = DefaultSnapshotEvery
	}
	if cfg.HealEvery <= 0 {
		cfg.HealEvery = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d, err := openDisk(cfg.Log)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, disk: d, reqs: make(chan func()), done: make(chan struct{})}
	if err := n.restart(); err != nil {
		return nil, err
	}
	n.publish()
	return n, nil
}

// restart builds the RawNode from what the disk holds and restores the
// machine from its snapshot.
func (n *Node) restart() error {
	snap, err := n.disk.mem.Snapshot()
	if err != nil {
		return err
	}
	n.cs = snap.GetMetadata().GetConfState()
	if n.cs == nil {
		n.cs = &pb.ConfState{}
	}
	n.snapAt = snap.GetMetadata().GetIndex()
	n.applied = n.snapAt
	if !raft.IsEmptySnap(snap) {
		if err := n.cfg.Machine.Restore(n.snapAt, snap.GetMetadata().GetTerm(), n.cs, snap.GetData()); err != nil {
			return fmt.Errorf("consensus: restore the snapshot at %d: %w", n.snapAt, err)
		}
	}
	// What the log holds as committed is applied now, before the node
	// serves: a restarted node answers with the State it had, not the
	// older one of its last snapshot.
	hs, _, _ := n.disk.mem.InitialState()
	if last, _ := n.disk.mem.LastIndex(); hs.GetCommit() > n.applied && hs.GetCommit() <= last {
		ents, err := n.disk.mem.Entries(n.applied+1, hs.GetCommit()+1, ^uint64(0))
		if err != nil {
			return fmt.Errorf("consensus: read the committed entries: %w", err)
		}
		// Up to the first configuration change: raft learns those only
		// by being handed them again (one is rare after the snapshot,
		// which is taken at every change).
		for i, e := range ents {
			if e.GetType() != pb.EntryNormal {
				ents = ents[:i]
				break
			}
		}
		n.applyWith(ents, nil)
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID: n.cfg.ID, ElectionTick: n.cfg.ElectionTicks, HeartbeatTick: 1, Storage: n.disk.mem, Applied: n.applied,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, MaxUncommittedEntriesSize: 64 << 20,
		CheckQuorum: true, PreVote: true, Logger: raftLogger{n.cfg.Logger},
	})
	if err != nil {
		return fmt.Errorf("consensus: %w", err)
	}
	n.rn, n.halted = rn, nil
	return nil
}

// Fresh reports whether the node has no log at all: it joins a cluster
// whose leader adds it, or bootstraps one.
func (n *Node) Fresh() bool {
	s := n.Status()
	return s.Term == 0 && s.Applied == 0 && len(s.Voters) == 0 && len(s.Learners) == 0
}

// Run drives the node until ctx ends.
func (n *Node) Run(ctx context.Context) error {
	defer close(n.done)
	tick := time.NewTicker(n.cfg.Tick)
	defer tick.Stop()
	heal := time.NewTicker(n.cfg.HealEvery)
	defer heal.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if n.rn != nil {
				n.rn.Tick()
			}
		case <-heal.C:
			n.heal()
		case f := <-n.reqs:
			f()
		}
		n.process()
		n.publish()
		n.takeBackLoss()
	}
}

// takeBackLoss clears the loss a damaged log recorded at open once this
// node follows a leader and has applied all it committed: the leader sent
// what was lost, and the log on disk holds it again.
func (n *Node) takeBackLoss() {
	if n.rn == nil || n.cfg.Log.Status().Recovery.Loss == nil {
		return
	}
	st := n.status.Load()
	if st.Lead == 0 || st.Lead == n.cfg.ID || st.Commit == 0 || st.Applied < st.Commit {
		return
	}
	if err := n.cfg.Log.LossRecovered(); err != nil {
		n.cfg.Logger.Warn("cannot clear the recorded loss", "err", err)
		return
	}
	n.cfg.Logger.Info("the history the raft log had lost was taken back from the leader")
}

// do runs f on the owner goroutine.
func (n *Node) do(ctx context.Context, f func() error) error {
	errc := make(chan error, 1)
	select {
	case n.reqs <- func() { errc <- f() }:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrStopped
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrStopped
	}
}

// ErrHalted wraps why a node whose log stopped writing refuses work.
type ErrHalted struct{ Cause error }

func (e *ErrHalted) Error() string {
	return fmt.Sprintf("consensus: this node's log stopped writing, so it takes no part in decisions until it writes again: %v", e.Cause)
}
func (e *ErrHalted) Unwrap() error { return e.Cause }

func (n *Node) live() error {
	if n.rn == nil {
		return &ErrHalted{Cause: n.halted}
	}
	return nil
}

// Step hands raft a message from a peer.
func (n *Node) Step(ctx context.Context, m *pb.Message) error {
	return n.do(ctx, func() error {
		if err := n.live(); err != nil {
			return err
		}
		if err := n.rn.Step(m); err != nil && !errors.Is(err, raft.ErrStepPeerNotFound) && !errors.Is(err, raft.ErrStepLocalMsg) {
			return err
		}
		return nil
	})
}

// ErrProposalDropped: raft did not take the proposal (no leader here, or
// a transfer under way); it is certainly not in the log.
var ErrProposalDropped = raft.ErrProposalDropped

// Propose appends data to the log, when this node leads. It returns once
// raft took it; committing is for the caller to observe through the
// machine.
func (n *Node) Propose(ctx context.Context, data []byte) error {
	return n.do(ctx, func() error {
		if err := n.live(); err != nil {
			return err
		}
		return n.rn.Propose(data)
	})
}

// ProposeConfChange proposes a configuration change, when this node leads.
func (n *Node) ProposeConfChange(ctx context.Context, cc *pb.ConfChange) error {
	return n.do(ctx, func() error {
		if err := n.live(); err != nil {
			return err
		}
		return n.rn.ProposeConfChange(cc)
	})
}

// Campaign starts an election now.
func (n *Node) Campaign(ctx context.Context) error {
	return n.do(ctx, func() error {
		if err := n.live(); err != nil {
			return err
		}
		return n.rn.Campaign()
	})
}

// TransferLeader asks the leader to hand leadership to to.
func (n *Node) TransferLeader(ctx context.Context, to uint64) error {
	return n.do(ctx, func() error {
		if err := n.live(); err != nil {
			return err
		}
		n.rn.TransferLeader(to)
		return nil
	})
}

// ReportUnreachable and ReportSnapshot tell raft what the transport saw.
func (n *Node) ReportUnreachable(id uint64) {
	go n.do(context.Background(), func() error {
		if n.rn != nil {
			n.rn.ReportUnreachable(id)
		}
		return nil
	})
}

func (n *Node) ReportSnapshot(id uint64, ok bool) {
	st := raft.SnapshotFinish
	if !ok {
		st = raft.SnapshotFailure
	}
	go n.do(context.Background(), func() error {
		if n.rn != nil {
			n.rn.ReportSnapshot(id, st)
		}
		return nil
	})
}

// Bootstrap makes a fresh node the single voter of a new cluster whose
// machine starts from data, and campaigns.
func (n *Node) Bootstrap(ctx context.Context, data []byte) error {
	return n.do(ctx, func() error {
		if !n.fresh() {
			return ErrNotFresh
		}
		return n.reset(1, 1, 1, data, nil)
	})
}

// fresh is Fresh on the owner goroutine.
func (n *Node) fresh() bool {
	hs, _, _ := n.disk.mem.InitialState()
	last, _ := n.disk.mem.LastIndex()
	return last == 0 && hs.GetTerm() == 0 && len(n.cs.GetVoters()) == 0 && len(n.cs.GetLearners()) == 0
}

// reset rewrites the log as one snapshot at (index, term) of data with
// this node the only voter, restarts raft on it and campaigns.
func (n *Node) reset(index, term, hsTerm uint64, data []byte, tail []*pb.Entry) error {
	snap := &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(index), Term: proto.Uint64(term),
		ConfState: &pb.ConfState{Voters: []uint64{n.cfg.ID}}}}
	commit := index
	if len(tail) > 0 {
		commit = tail[len(tail)-1].GetIndex()
	}
	hs := &pb.HardState{Term: proto.Uint64(hsTerm), Commit: proto.Uint64(commit)}
	if err := n.disk.rewrite(snap, hs, tail); err != nil {
		return err
	}
	if err := n.restart(); err != nil {
		return err
	}
	return n.rn.Campaign()
}

// ForceSingleVoter makes this node the only voter: the operator's way on
// when the other voters are gone for good (skulk cluster recover). Every
// entry its log holds is kept and committed, including those it had not
// learnt were committed (they may have been, on the majority that is
// gone), as etcd's --force-new-cluster does. The caller checks that no
// majority is reachable.
func (n *Node) ForceSingleVoter(ctx context.Context) error {
	return n.do(ctx, func() error {
		if err := n.live(); err != nil {
			return err
		}
		data, err := n.cfg.Machine.Snapshot()
		if err != nil {
			return err
		}
		term, err := n.disk.mem.Term(n.applied)
		if err != nil {
			return fmt.Errorf("consensus: the term at %d: %w", n.applied, err)
		}
		hs, _, _ := n.disk.mem.InitialState()
		var tail []*pb.Entry
		if last, _ := n.disk.mem.LastIndex(); last > n.applied {
			if tail, err = n.disk.mem.Entries(n.applied+1, last+1, ^uint64(0)); err != nil {
				return err
			}
		}
		return n.reset(n.applied, term, hs.GetTerm(), data, tail)
	})
}

// process handles every Ready raft has: keep, send, apply, advance.
func (n *Node) process() {
	for n.rn != nil && n.rn.HasReady() {
		rd := n.rn.Ready()
		if err := n.disk.save(rd); err != nil {
			n.halt(err)
			return
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			md := rd.Snapshot.GetMetadata()
			if err := n.cfg.Machine.Restore(md.GetIndex(), md.GetTerm(), md.GetConfState(), rd.Snapshot.GetData()); err != nil {
				n.halt(fmt.Errorf("restore a snapshot from the leader: %w", err))
				return
			}
			n.cs, n.applied, n.snapAt = md.GetConfState(), md.GetIndex(), md.GetIndex()
		}
		if len(rd.Messages) > 0 {
			n.cfg.Send(rd.Messages)
		}
		n.apply(rd.CommittedEntries)
		n.rn.Advance(rd)
		n.maybeCompact()
	}
}

func (n *Node) apply(ents []*pb.Entry) {
	n.applyWith(ents, func(cc *pb.ConfChange) *pb.ConfState { return n.rn.ApplyConfChange(cc) })
}

func (n *Node) applyWith(ents []*pb.Entry, applyConf func(*pb.ConfChange) *pb.ConfState) {
	for _, e := range ents {
		if e.GetIndex() <= n.applied {
			continue
		}
		switch e.GetType() {
		case pb.EntryNormal:
			if len(e.GetData()) > 0 {
				n.cfg.Machine.Apply(e.GetIndex(), e.GetTerm(), e.GetData())
			}
		case pb.EntryConfChange:
			cc := &pb.ConfChange{}
			if err := proto.Unmarshal(e.GetData(), cc); err != nil {
				n.cfg.Logger.Error("a committed configuration change does not decode; skipped", "index", e.GetIndex(), "err", err)
				break
			}
			n.cs = applyConf(cc)
			n.cfg.Machine.ConfChanged(e.GetIndex(), cc, n.cs)
			// A snapshot that names the new configuration: a joining
			// learner starts from it (it is not in the older ones).
			n.compactNow = true
		case pb.EntryConfChangeV2:
			n.cfg.Logger.Error("a committed joint configuration change is not used here; skipped", "index", e.GetIndex())
		}
		n.applied = e.GetIndex()
	}
}

func (n *Node) maybeCompact() {
	if n.applied-n.snapAt < n.cfg.SnapshotEvery && !n.compactNow {
		return
	}
	n.compactNow = false
	data, err := n.cfg.Machine.Snapshot()
	if err == nil {
		err = n.disk.compact(n.applied, n.cs, data)
	}
	if err != nil {
		n.cfg.Logger.Warn("log compaction failed; the log keeps every entry meanwhile", "index", n.applied, "err", err)
		return
	}
	n.snapAt = n.applied
}

// halt takes the node out of consensus: its log stopped writing.
func (n *Node) halt(err error) {
	n.cfg.Logger.Error("the raft log stopped writing: this node takes no part in decisions until its disk takes writes again", "err", err)
	n.rn, n.halted = nil, err
}

// heal has the log check its disk; a halted node whose log writes again
// stores what it kept and restarts raft from it.
func (n *Node) heal() {
	if err := n.cfg.Log.Heal(n.disk.blob); err != nil {
		n.cfg.Logger.Warn("the raft log could not resume writing", "err", err)
		return
	}
	if st := n.cfg.Log.Status(); st.Degraded && n.rn != nil {
		// The disk check found the log under its floor before a write did.
		n.halt(fmt.Errorf("%w: %v", ErrNotDurable, st.Cause))
		return
	}
	if n.rn != nil || n.cfg.Log.Status().Degraded {
		return
	}
	if err := n.restart(); err != nil {
		n.cfg.Logger.Error("cannot restart raft after the log healed", "err", err)
		return
	}
	n.cfg.Logger.Info("the raft log writes again; this node takes part in decisions")
}

// Status is the node's view of the cluster, for diagnostics and decisions.
type Status struct {
	ID       uint64
	Lead     uint64
	Term     uint64
	Commit   uint64
	Applied  uint64
	Leader   bool // this node leads
	Voters   []uint64
	Learners []uint64
	// Progress is the leader's view of each member: the index it is known
	// to hold, and whether it was heard from within an election timeout.
	Progress map[uint64]Progress
	Halted   string
	// LogDegraded is why the log stopped writing ("" while it writes):
	// read here, as published by the node's goroutine, since the log is
	// not safe for concurrent use.
	LogDegraded string
}

// Progress is one member as the leader sees it.
type Progress struct {
	Match        uint64
	RecentActive bool
	Learner      bool
}

// Status returns the node's latest status.
func (n *Node) Status() Status { return *n.status.Load() }

func (n *Node) publish() {
	s := &Status{ID: n.cfg.ID, Applied: n.applied, Voters: slices.Clone(n.cs.GetVoters()), Learners: slices.Clone(n.cs.GetLearners())}
	if ls := n.cfg.Log.Status(); ls.Degraded {
		s.LogDegraded = fmt.Sprint(ls.Cause)
	}
	if n.rn == nil {
		if n.halted != nil {
			s.Halted = n.halted.Error()
		}
		hs, _, _ := n.disk.mem.InitialState()
		s.Term, s.Commit = hs.GetTerm(), hs.GetCommit()
		n.status.Store(s)
		return
	}
	st := n.rn.Status()
	s.Lead, s.Term, s.Commit = st.Lead, st.GetTerm(), st.GetCommit()
	s.Leader = st.RaftState == raft.StateLeader
	if s.Leader {
		s.Progress = map[uint64]Progress{}
		for id, pr := range st.Progress {
			s.Progress[id] = Progress{Match: pr.Match, RecentActive: pr.RecentActive || id == n.cfg.ID, Learner: pr.IsLearner}
		}
	}
	n.status.Store(s)
}

// Done is closed when Run returns.
func (n *Node) Done() <-chan struct{} { return n.done }

// raftLogger routes raft's own logging to slog, at debug below warnings.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)                 {}
func (r raftLogger) Debugf(format string, v ...any) {}
func (r raftLogger) Info(v ...any)                  { r.l.Debug(fmt.Sprint(v...), "component", "raft") }
func (r raftLogger) Infof(format string, v ...any) {
	r.l.Debug(fmt.Sprintf(format, v...), "component", "raft")
}
func (r raftLogger) Warning(v ...any)            { r.l.Warn(fmt.Sprint(v...), "component", "raft") }
func (r raftLogger) Warningf(f string, v ...any) { r.l.Warn(fmt.Sprintf(f, v...), "component", "raft") }
func (r raftLogger) Error(v ...any)              { r.l.Error(fmt.Sprint(v...), "component", "raft") }
func (r raftLogger) Errorf(f string, v ...any)   { r.l.Error(fmt.Sprintf(f, v...), "component", "raft") }
func (r raftLogger) Fatal(v ...any)              { panic(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }
func (r raftLogger) Panic(v ...any)              { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }
