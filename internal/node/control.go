package node

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
	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/eventlog"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
	"github.com/skulk/skulk/internal/master"
	"github.com/skulk/skulk/internal/placement"
	"github.com/skulk/skulk/internal/replica"
	"github.com/skulk/skulk/internal/state"
)

// control is this node's view of the control plane, whatever its role: as
// master it is the master itself; as follower a replica that keeps a copy of
// the log and forwards commands. The worker and the gateway hold it; the
// election switches what is behind it.
type control struct {
	node      ids.NodeID
	log       *eventlog.Log
	card      func(ids.ModelID) (catalog.Card, bool)
	nodes     func() []placement.Node
	dial      func(ctx context.Context, master ids.NodeID) (io.ReadWriteCloser, error)
	onMaster  func(ctx context.Context, m *master.Master) // duties only a master has
	startedAt time.Time
	version   string
	commit    string
	logger    *slog.Logger
	// maxPerModel is this node's --max-instances-per-model, applied while
	// it is master.
	maxPerModel int

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

func (c *control) stop() {
	if r := c.cur.Swap(nil); r != nil {
		r.cancel()
		<-r.done
	}
}

// BecomeMaster makes this node the master in term.
func (c *control) BecomeMaster(ctx context.Context, term ids.Term) error {
	c.switching.Lock()
	defer c.switching.Unlock()
	c.stop()
	st, err := master.Recover(c.log)
	if err != nil {
		return err
	}
	restarted := !c.hadRole
	c.hadRole = true
	m := master.New(master.Config{Node: c.node, Log: c.log, State: st, Term: term, Restarted: restarted, Now: time.Now,
		Card: c.card, Nodes: c.nodes, MaxInstancesPerModel: c.maxPerModel, Logger: c.logger.With("component", "master")})
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &role{master: m, term: term, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := m.Run(rctx); err != nil {
			c.logger.Error("master stopped", "err", err)
		}
	}()
	if c.onMaster != nil {
		wg.Add(1)
		go func() { defer wg.Done(); c.onMaster(rctx, m) }()
	}
	go func() { wg.Wait(); close(r.done) }()
	c.cur.Store(r)
	return nil
}

// BecomeFollower makes this node follow leader.
func (c *control) BecomeFollower(ctx context.Context, leader ids.NodeID, fresh bool) error {
	c.switching.Lock()
	defer c.switching.Unlock()
	c.stop()
	st, err := master.Recover(c.log)
	if err != nil {
		return err
	}
	c.hadRole = true
	f := replica.New(replica.Config{Node: c.node, Log: c.log, State: st, Fresh: fresh,
		Dial:   func(ctx context.Context) (io.ReadWriteCloser, error) { return c.dial(ctx, leader) },
		Logger: c.logger.With("component", "replica", "master", leader)})
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &role{follower: f, leader: leader, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); f.Run(rctx) }()
	c.cur.Store(r)
	return nil
}

// Position reports this node's log position for elections and diagnostics.
func (c *control) Position() election.Position {
	p := election.Position{StartedAtUnixMs: c.startedAt.UnixMilli(), Version: c.version, Commit: c.commit}
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
func (c *control) recovered() (state.State, error) {
	c.switching.Lock()
	defer c.switching.Unlock()
	if c.cur.Load() != nil {
		return state.State{}, errNoRole
	}
	return master.Recover(c.log)
}

// The control-plane methods the worker, gateway and replica server use. A
// call that meets a role switch is retried once against the new role.

func (c *control) with(ctx context.Context, f func(r *role) error) error {
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

func (c *control) Execute(ctx context.Context, cmd event.Command) (out []event.IndexedEvent, err error) {
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

func (c *control) Report(ctx context.Context, src event.Source, ev event.Event) error {
	return c.with(ctx, func(r *role) error {
		if r.master != nil {
			return r.master.Report(ctx, src, ev)
		}
		return r.follower.Report(ctx, src, ev)
	})
}

func (c *control) State(ctx context.Context) (st state.State, err error) {
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

func (c *control) Subscribe(ctx context.Context, after ids.Index) (ch <-chan event.IndexedEvent, err error) {
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
func (c *control) untilSwitch(ctx context.Context, ch <-chan event.IndexedEvent) <-chan event.IndexedEvent {
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
func (c *control) Follow(ctx context.Context, after ids.Index, afterTerm ids.Term, afterMaster ids.NodeID) (*state.State, <-chan event.IndexedEvent, error) {
	r := c.cur.Load()
	if r == nil || r.master == nil {
		return nil, nil, infer.Errorf(infer.ClassUnavailable, "this node is not the master")
	}
	return r.master.Follow(ctx, after, afterTerm, afterMaster)
}

// isMaster reports whether this node is master now.
func (c *control) isMaster() bool {
	r := c.cur.Load()
	return r != nil && r.master != nil
}

// leader returns the master this node knows of.
func (c *control) leader() ids.NodeID {
	r := c.cur.Load()
	switch {
	case r == nil:
		return ""
	case r.master != nil:
		return c.node
	}
	return r.leader
}
