// Package master is the control plane's single writer while its node leads
// the Raft group. One goroutine turns commands into events (decide), admits
// workers' local facts against the allowlist, trial-applies each batch on
// the committed State and proposes it; a call returns once its batch is
// committed on a majority and applied, so an acknowledged decision is never
// lost. Every node applies the committed log (internal/control/plane).
package master

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Config wires the master to its surroundings.
type Config struct {
	Node ids.NodeID
	// Propose appends a batch to the replicated log and returns its events
	// as applied, once a majority holds it. An error says the batch is not
	// known to be committed; a *fault.Error of class unavailable names why.
	Propose func(ctx context.Context, evs []event.Event) ([]event.IndexedEvent, error)
	// Applied is the committed State, as this node has applied it.
	Applied func() state.State
	// Term is the Raft term this node leads in: the master's first batch
	// indexes MasterElected in it.
	Term ids.Term
	// Restarted says this process just started (not a failover within a
	// running cluster): the runners the State holds as live died with the
	// old process and are reported stopped.
	Restarted bool
	Now       func() time.Time
	// Card looks a model up in the catalog.
	Card func(ids.ModelID) (catalog.Card, bool)
	// Nodes reports the current resources of the live nodes.
	Nodes func() []placement.Node
	// MaxInstancesPerModel bounds the instances of one model in the cluster
	// while this node is master (0 = placement.DefaultMaxInstancesPerModel).
	MaxInstancesPerModel int
	Logger               *slog.Logger
}

// DefaultHealEvery is how often the event log's disk is checked.
const DefaultHealEvery = 2 * time.Second

// maxBatch bounds the requests decided into one raft entry.
const maxBatch = 64

// Master decides while its node leads. Its methods are safe for concurrent
// use; they talk to the owner goroutine started by Run.
type Master struct {
	cfg   Config
	reqs  chan ask
	done  chan struct{}
	ready chan struct{} // closed once the leadership's first batches committed
}

type ask struct {
	ctx    context.Context
	cmd    event.Command // a command to decide, or
	ev     event.Event   // a local fact to admit
	source event.Source  // who submitted ev
	reply  chan reply
}

type reply struct {
	events []event.IndexedEvent
	err    error
}

// New returns a master for cfg; call Run to start it.
func New(cfg Config) *Master {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Master{cfg: cfg, reqs: make(chan ask), done: make(chan struct{}), ready: make(chan struct{})}
}

// ErrStopped is returned by calls made after the master stopped.
var ErrStopped = errors.New("master: stopped")

// Run decides until ctx ends or the first batch (the election) fails.
func (m *Master) Run(ctx context.Context) error {
	defer close(m.done)
	l := &loop{cfg: m.cfg, ctx: ctx}
	if err := l.bootstrap(); err != nil {
		return err
	}
	close(m.ready)
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-m.reqs:
			batch := []ask{r}
		more:
			for len(batch) < maxBatch {
				select {
				case r := <-m.reqs:
					batch = append(batch, r)
				default:
					break more
				}
			}
			l.serve(batch)
		}
	}
}

func (m *Master) call(ctx context.Context, r ask) (reply, error) {
	r.ctx, r.reply = ctx, make(chan reply, 1)
	select {
	case m.reqs <- r:
	case <-ctx.Done():
		return reply{}, ctx.Err()
	case <-m.done:
		return reply{}, ErrStopped
	}
	select {
	case rep := <-r.reply:
		return rep, rep.err
	case <-ctx.Done():
		return reply{}, ctx.Err()
	case <-m.done:
		return reply{}, ErrStopped
	}
}

// Ready is closed once the master's election and the settling of a
// restart are committed.
func (m *Master) Ready() <-chan struct{} { return m.ready }

// Execute decides a command and returns the events it indexed, once they
// are committed.
func (m *Master) Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error) {
	if err := cmd.Validate(); err != nil {
		return nil, fault.Errorf(fault.ClassInvalid, "%v", err)
	}
	rep, err := m.call(ctx, ask{cmd: cmd})
	return rep.events, err
}

// Report admits a worker's local fact.
func (m *Master) Report(ctx context.Context, source event.Source, ev event.Event) error {
	_, err := m.call(ctx, ask{ev: ev, source: source})
	return err
}

// State returns the committed State, once the master's election
// committed.
func (m *Master) State(ctx context.Context) (state.State, error) {
	if _, err := m.call(ctx, ask{}); err != nil {
		return state.State{}, err
	}
	return m.cfg.Applied(), nil
}

// loop is the state the owner goroutine holds.
type loop struct {
	cfg Config
	ctx context.Context
	st  state.State // the committed State, refreshed after each batch
}

// serve decides a batch of requests on the committed State, each on the
// State the ones before it leave, and proposes what they decided as one
// entry. An ask whose decision fails is answered alone; the others go
// on.
func (l *loop) serve(reqs []ask) {
	l.st = l.cfg.Applied()
	next := l.st
	type decided struct {
		r   ask
		evs []event.Event
	}
	var ok []decided
	var all []event.Event
	for _, r := range reqs {
		if r.cmd == nil && r.ev == nil { // a read: answered in order
			r.reply <- reply{}
			continue
		}
		if r.ctx.Err() != nil {
			r.reply <- reply{err: r.ctx.Err()}
			continue
		}
		var evs []event.Event
		var err error
		if r.cmd != nil {
			evs, err = decide(next, r.cmd, l.inputs())
		} else if err = event.Admit(r.source, r.ev); err != nil {
			err = fault.Errorf(fault.ClassInvalid, "%v", err)
		} else {
			evs = []event.Event{r.ev}
		}
		if err == nil {
			var s state.State
			if s, err = trial(next, evs); err == nil {
				next = s
			}
		}
		if err != nil {
			r.reply <- reply{err: err}
			continue
		}
		ok = append(ok, decided{r, evs})
		all = append(all, evs...)
	}
	if len(ok) == 0 {
		return
	}
	out, err := l.commit(all)
	for _, d := range ok {
		if err != nil {
			d.r.reply <- reply{err: err}
			continue
		}
		d.r.reply <- reply{events: out[:len(d.evs)]}
		out = out[len(d.evs):]
	}
}

func (l *loop) inputs() inputs {
	in := inputs{master: l.cfg.Node, nowMs: l.cfg.Now().UnixMilli(), card: l.cfg.Card, maxPerModel: l.cfg.MaxInstancesPerModel}
	if l.cfg.Nodes != nil {
		in.nodes = l.cfg.Nodes()
	}
	return in
}

// trial applies evs on st as the log would index them; a batch that does
// not apply is refused before it is proposed.
func trial(st state.State, evs []event.Event) (state.State, error) {
	for _, ev := range evs {
		ie := event.IndexedEvent{Term: st.Term, Index: st.LastIndex + 1, Event: ev}
		if me, ok := ev.(event.MasterElected); ok {
			ie.Term = me.Term
		}
		s, err := state.Apply(st, ie)
		if err != nil {
			return st, fault.Errorf(fault.ClassConflict, "%v", err)
		}
		st = s
	}
	return st, nil
}

// commit proposes evs and waits until they are committed and applied.
func (l *loop) commit(evs []event.Event) ([]event.IndexedEvent, error) {
	if _, err := trial(l.st, evs); err != nil {
		return nil, err
	}
	out, err := l.cfg.Propose(l.ctx, evs)
	l.st = l.cfg.Applied()
	return out, err
}

// bootstrap starts a leadership: MasterElected alone first (it cannot
// conflict with whatever earlier terms left uncommitted, and once it is
// applied the State holds every entry committed before this term), then
// registers the node and, after a restart, stops its own previous runners.
// (Other nodes' workers stop their own previous runners.)
func (l *loop) bootstrap() error {
	l.st = l.cfg.Applied()
	if _, err := l.commit([]event.Event{event.MasterElected{Node: l.cfg.Node, Term: l.cfg.Term}}); err != nil {
		return fmt.Errorf("master: the election of term %d did not commit: %w", l.cfg.Term, err)
	}
	var evs []event.Event
	if _, ok := l.st.Nodes[l.cfg.Node]; !ok {
		evs = append(evs, event.NodeJoined{Node: l.cfg.Node, AtUnixMs: l.cfg.Now().UnixMilli()})
	}
	if l.cfg.Restarted {
		for _, ev := range l.st.RunnersRestarted(l.cfg.Node) {
			evs = append(evs, ev)
		}
	}
	if len(evs) > 0 {
		if _, err := l.commit(evs); err != nil {
			l.cfg.Logger.Warn("could not settle state left by the previous process", "err", err)
		}
	}
	return nil
}
