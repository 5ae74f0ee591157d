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
	ev     event.Event   // a local fact to admit, or
	steps  []Step        // an atomic batch
	source event.Source  // who submitted ev
	reply  chan reply
}

type reply struct {
	events []event.IndexedEvent
	steps  []Decided // a batch's, step by step
	err    error
}

// Step is one decision of an atomic Batch: a local fact to admit, or
// commands tried in order until one decides (a placement and its
// fallback). A Required step refused refuses the whole batch.
type Step struct {
	Source   event.Source
	Fact     event.Event
	Try      []event.Command
	Required bool
}

// Decided is what a Step came to: the events it committed, or why it was
// refused.
type Decided struct {
	Events []event.IndexedEvent
	Err    error
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

// Batch decides steps in order, each on the State the ones before it
// leave, and commits those that decided as one entry: no reader ever sees
// the State between them (a lost node's instances torn down but not yet
// placed again). A refused step is left out, its Decided.Err says why,
// unless it is Required: then nothing commits and the error returned is
// its refusal. Otherwise the error returned says the entry did not
// commit.
func (m *Master) Batch(ctx context.Context, steps []Step) ([]Decided, error) {
	for _, st := range steps {
		for _, cmd := range st.Try {
			if err := cmd.Validate(); err != nil {
				return nil, fault.Errorf(fault.ClassInvalid, "%v", err)
			}
		}
	}
	rep, err := m.call(ctx, ask{steps: steps})
	return rep.steps, err
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
		r     ask
		evs   []event.Event
		steps []Decided // a batch's outcomes, Events still empty
		parts []int     // a batch's event count per step
	}
	var ok []decided
	var all []event.Event
	for _, r := range reqs {
		if r.cmd == nil && r.ev == nil && r.steps == nil { // a read: answered in order
			r.reply <- reply{}
			continue
		}
		if r.ctx.Err() != nil {
			r.reply <- reply{err: r.ctx.Err()}
			continue
		}
		if r.steps != nil {
			d := decided{r: r, steps: make([]Decided, len(r.steps)), parts: make([]int, len(r.steps))}
			before := next
			var refused error
			for i, st := range r.steps {
				evs, s, err := l.decideStep(next, st)
				if err != nil && st.Required {
					refused = err
					break
				}
				if err != nil {
					d.steps[i].Err = err
					continue
				}
				next = s
				d.evs = append(d.evs, evs...)
				d.parts[i] = len(evs)
			}
			if refused != nil {
				next = before
				r.reply <- reply{err: refused}
				continue
			}
			ok = append(ok, d)
			all = append(all, d.evs...)
			continue
		}
		evs, s, err := l.decideOne(next, r.cmd, r.source, r.ev)
		if err != nil {
			r.reply <- reply{err: err}
			continue
		}
		next = s
		ok = append(ok, decided{r: r, evs: evs})
		all = append(all, evs...)
	}
	if len(all) == 0 {
		for _, d := range ok { // batches whose every step was refused
			d.r.reply <- reply{steps: d.steps}
		}
		return
	}
	out, err := l.commit(all)
	for _, d := range ok {
		if err != nil {
			d.r.reply <- reply{err: err}
			continue
		}
		mine := out[:len(d.evs):len(d.evs)]
		out = out[len(d.evs):]
		if d.steps == nil {
			d.r.reply <- reply{events: mine}
			continue
		}
		for i, n := range d.parts {
			d.steps[i].Events = mine[:n:n]
			mine = mine[n:]
		}
		d.r.reply <- reply{steps: d.steps}
	}
}

// decideOne decides a command, or admits a fact, on st and returns its
// events with the State they leave.
func (l *loop) decideOne(st state.State, cmd event.Command, source event.Source, ev event.Event) ([]event.Event, state.State, error) {
	var evs []event.Event
	var err error
	if cmd != nil {
		evs, err = decide(st, cmd, l.inputs())
	} else if err = event.Admit(source, ev); err != nil {
		err = fault.Errorf(fault.ClassInvalid, "%v", err)
	} else {
		evs = []event.Event{ev}
	}
	if err != nil {
		return nil, st, err
	}
	next, err := trial(st, evs)
	if err != nil {
		return nil, st, err
	}
	return evs, next, nil
}

// decideStep decides a batch's step: its fact, or the first of its
// commands that decides.
func (l *loop) decideStep(st state.State, s Step) ([]event.Event, state.State, error) {
	if s.Fact != nil {
		return l.decideOne(st, nil, s.Source, s.Fact)
	}
	var err error = fault.Errorf(fault.ClassInvalid, "master: a batch step with nothing to decide")
	for _, cmd := range s.Try {
		var evs []event.Event
		var next state.State
		if evs, next, err = l.decideOne(st, cmd, event.Source{}, nil); err == nil {
			return evs, next, nil
		}
	}
	return nil, st, err
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
