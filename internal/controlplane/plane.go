// Package controlplane is one node's view of the control plane, whatever its
// role: as master it is the master itself; as follower a replica that keeps
// a copy of the log and forwards commands. The election switches what is
// behind it (BecomeMaster, BecomeFollower); the worker, the gateway and the
// replica server hold it and never see the switch, except as a retried call.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skulk/skulk/internal/catalog"
	"github.com/skulk/skulk/internal/election"
	"github.com/skulk/skulk/internal/election/decide"
	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/eventlog"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
	"github.com/skulk/skulk/internal/master"
	"github.com/skulk/skulk/internal/placement"
	"github.com/skulk/skulk/internal/replica"
	"github.com/skulk/skulk/internal/state"
)

// Config is what a Plane needs; Dial and OnMaster may be set after New,
// before the first role is taken.
type Config struct {
	Node      ids.NodeID
	Log       *eventlog.Log
	Card      func(ids.ModelID) (catalog.Card, bool)
	Nodes     func() []placement.Node
	Dial      func(ctx context.Context, master ids.NodeID) (io.ReadWriteCloser, error)
	OnMaster  func(ctx context.Context, m *master.Master) // duties only a master has, for one leadership
	StartedAt time.Time
	Version   string
	Commit    string
	Logger    *slog.Logger
	// MaxPerModel is this node's --max-instances-per-model, applied while
	// it is master.
	MaxPerModel int
	// Terms, when set, stores the highest term this node used or saw, apart
	// from the log (eventlog.TermStore): a master's term is stored before
	// it acts in it, and always exceeds the stored one.
	Terms Terms
}

// Terms is the durable record of the highest term (eventlog.TermStore).
type Terms interface {
	Current() uint64
	Raise(term uint64) error
}

// Plane is this node's control plane. Its methods are safe for concurrent
// use; only the election calls BecomeMaster and BecomeFollower.
type Plane struct {
	Config

	switching sync.Mutex // serialises role changes (only the election calls them)
	cur       atomic.Pointer[role]
	hadRole   bool // guarded by switching: a role was taken since the process started
}

// role is one incarnation of this node's part in the control plane.
type role struct {
	master   *master.Master
	follower *replica.Follower
	term     ids.Term   // the master's term, when master
	leader   ids.NodeID // the master followed, when follower
	cancel   context.CancelFunc
	done     chan struct{}
}

// errNoRole is returned while the node has no role yet (an election is
// under way) or is switching.
var errNoRole = infer.Errorf(infer.ClassUnavailable, "the cluster has no master yet (an election is under way); retry in a moment")

// Stop ends the current role.
func (c *Plane) Stop() {
	if r := c.cur.Swap(nil); r != nil {
		r.cancel()
		<-r.done
	}
}

// BecomeMaster makes this node the master in term.
func (c *Plane) BecomeMaster(ctx context.Context, term ids.Term) error {
	c.switching.Lock()
	defer c.switching.Unlock()
	c.Stop()
	st, err := master.Recover(c.Log)
	if err != nil {
		return err
	}
	if c.Terms != nil {
		// Stored before the master sends anything in it: whatever happens
		// to the log later, this node never uses the term again.
		term = decide.NextTerm(term, st.Term, ids.Term(c.Terms.Current()))
		if err := c.Terms.Raise(uint64(term)); err != nil {
			// A disk that cannot take 20 bytes is full: the log is counting
			// only and the node's health says so. Leading from memory beats
			// a cluster with no master; the term is at risk only if this
			// node restarts alone before the disk is fixed.
			c.Logger.Error("cannot store the new term; leading in it anyway", "term", term, "err", err)
		}
	}
	restarted := !c.hadRole
	c.hadRole = true
	m := master.New(master.Config{Node: c.Node, Log: c.Log, State: st, Term: term, Restarted: restarted, Now: time.Now,
		Card: c.Card, Nodes: c.Nodes, MaxInstancesPerModel: c.MaxPerModel, Logger: c.Logger.With("component", "master")})
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &role{master: m, term: term, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := m.Run(rctx); err != nil {
			c.Logger.Error("master stopped", "err", err)
		}
	}()
	if c.OnMaster != nil {
		wg.Add(1)
		go func() { defer wg.Done(); c.OnMaster(rctx, m) }()
	}
	go func() { wg.Wait(); close(r.done) }()
	c.cur.Store(r)
	return nil
}

// BecomeFollower makes this node follow leader.
func (c *Plane) BecomeFollower(ctx context.Context, leader ids.NodeID, fresh bool) error {
	c.switching.Lock()
	defer c.switching.Unlock()
	c.Stop()
	st, err := master.Recover(c.Log)
	if err != nil {
		return err
	}
	c.hadRole = true
	var terms replica.Terms
	if c.Terms != nil {
		terms = c.Terms
	}
	f := replica.New(replica.Config{Node: c.Node, Log: c.Log, State: st, Fresh: fresh, Terms: terms,
		Dial:   func(ctx context.Context) (io.ReadWriteCloser, error) { return c.Dial(ctx, leader) },
		Logger: c.Logger.With("component", "replica", "master", leader)})
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &role{follower: f, leader: leader, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); f.Run(rctx) }()
	c.cur.Store(r)
	return nil
}

// Position reports this node's log position for elections and diagnostics.
func (c *Plane) Position() election.Position {
	p := election.Position{StartedAtUnixMs: c.StartedAt.UnixMilli(), Version: c.Version, Commit: c.Commit}
	r := c.cur.Load()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var st state.State
	var err error
	switch {
	case r == nil:
		// No role yet: the position is what the log on disk holds.
		st, err = c.recovered()
	case r.master != nil:
		st, err = r.master.State(ctx)
		p.MasterOf = r.term
	default:
		st, err = r.follower.State(ctx)
	}
	if err != nil {
		return p
	}
	h := state.Hash(st)
	p.Term, p.Index, p.Master, p.StateHash = st.Term, st.LastIndex, st.Master, fmt.Sprintf("%x", h[:])
	return p
}

// recovered is the State the log holds, read while no role owns the log.
func (c *Plane) recovered() (state.State, error) {
	c.switching.Lock()
	defer c.switching.Unlock()
	if c.cur.Load() != nil {
		return state.State{}, errNoRole
	}
	return master.Recover(c.Log)
}

// The control-plane methods the worker, gateway and replica server use. A
// call that meets a role switch is retried once against the new role.

func (c *Plane) with(ctx context.Context, f func(r *role) error) error {
	for attempt := 0; ; attempt++ {
		r := c.cur.Load()
		if r == nil {
			if attempt >= 20 {
				return errNoRole
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		err := f(r)
		if (errors.Is(err, master.ErrStopped) || errors.Is(err, replica.ErrStopped)) && attempt < 20 && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		return err
	}
}

func (c *Plane) Execute(ctx context.Context, cmd event.Command) (out []event.IndexedEvent, err error) {
	err = c.with(ctx, func(r *role) error {
		if r.master != nil {
			out, err = r.master.Execute(ctx, cmd)
		} else {
			out, err = r.follower.Execute(ctx, cmd)
		}
		return err
	})
	return out, err
}

func (c *Plane) Report(ctx context.Context, src event.Source, ev event.Event) error {
	return c.with(ctx, func(r *role) error {
		if r.master != nil {
			return r.master.Report(ctx, src, ev)
		}
		return r.follower.Report(ctx, src, ev)
	})
}

func (c *Plane) State(ctx context.Context) (st state.State, err error) {
	err = c.with(ctx, func(r *role) error {
		if r.master != nil {
			st, err = r.master.State(ctx)
		} else {
			st, err = r.follower.State(ctx)
		}
		return err
	})
	return st, err
}

func (c *Plane) Subscribe(ctx context.Context, after ids.Index) (ch <-chan event.IndexedEvent, err error) {
	err = c.with(ctx, func(r *role) error {
		if r.master != nil {
			ch, err = r.master.Subscribe(ctx, after)
		} else {
			ch, err = r.follower.Subscribe(ctx, after)
		}
		return err
	})
	if err == nil {
		// A role switch ends the old role's subscriptions: the subscriber
		// resubscribes from the State of the new role.
		ch = c.untilSwitch(ctx, ch)
	}
	return ch, err
}

// untilSwitch forwards ch until it closes or this node's role changes.
func (c *Plane) untilSwitch(ctx context.Context, ch <-chan event.IndexedEvent) <-chan event.IndexedEvent {
	r := c.cur.Load()
	if r == nil {
		return ch
	}
	out := make(chan event.IndexedEvent, cap(ch))
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.done:
				return
			case ie, ok := <-ch:
				if !ok {
					return
				}
				select {
				case out <- ie:
				case <-ctx.Done():
					return
				case <-r.done:
					return
				}
			}
		}
	}()
	return out
}

// Follow serves a follower's subscription; only a master can.
func (c *Plane) Follow(ctx context.Context, after ids.Index, afterTerm ids.Term, afterMaster ids.NodeID) (*state.State, <-chan event.IndexedEvent, error) {
	r := c.cur.Load()
	if r == nil || r.master == nil {
		return nil, nil, infer.Errorf(infer.ClassUnavailable, "this node is not the master")
	}
	return r.master.Follow(ctx, after, afterTerm, afterMaster)
}

// IsMaster reports whether this node is master now.
func (c *Plane) IsMaster() bool {
	r := c.cur.Load()
	return r != nil && r.master != nil
}

// Leader returns the master this node knows of.
func (c *Plane) Leader() ids.NodeID {
	r := c.cur.Load()
	switch {
	case r == nil:
		return ""
	case r.master != nil:
		return c.Node
	}
	return r.leader
}

// New returns a Plane with no role yet.
func New(cfg Config) *Plane { return &Plane{Config: cfg} }
