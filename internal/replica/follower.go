package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/state"
)

// Log is the follower's durable copy of the log (internal/eventlog).
type Log interface {
	Append(index uint64, payload []byte) error
	LastIndex() uint64
	Reset(index uint64, blob []byte) error
}

// Config wires a follower.
type Config struct {
	Node ids.NodeID
	Log  Log
	// State is the State recovered from Log.
	State state.State
	// Dial opens a new stream to the current master.
	Dial func(ctx context.Context) (io.ReadWriteCloser, error)
	// Fresh makes the first follow ask for a snapshot: a node that was
	// master in a partition that lost must not trust its own tail.
	Fresh bool
	// RetryDelay is the pause before reconnecting (default 200 ms).
	RetryDelay time.Duration
	// HealEvery is how often a Log that is a master.Healer checks its
	// disk (default master.DefaultHealEvery).
	HealEvery time.Duration
	// Terms, when set, is raised to the term of every event and snapshot
	// the follower takes, so this node never elects itself in a term it
	// has seen, whatever happens to its log.
	Terms  Terms
	Logger *slog.Logger
}

// Terms is the durable record of the highest term (eventlog.TermStore).
type Terms interface {
	Raise(term uint64) error
}

// healer is the optional disk check of the Log (see master.Healer).
type healer interface {
	Heal(snapshot func() ([]byte, error)) error
}

// subscriberQueue bounds a local subscriber's backlog.
const subscriberQueue = 1024

// retainedTail bounds the events kept for local subscribers that join late.
const retainedTail = 4096

// Follower keeps this node's log and State in step with the master. Its
// methods are safe for concurrent use; one goroutine (Run) owns the State.
type Follower struct {
	cfg  Config
	reqs chan any
	done chan struct{}
}

// New returns a follower; call Run.
func New(cfg Config) *Follower {
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = 200 * time.Millisecond
	}
	if cfg.HealEvery <= 0 {
		cfg.HealEvery = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Follower{cfg: cfg, reqs: make(chan any), done: make(chan struct{})}
}

// ErrStopped is returned by calls made after the follower stopped.
var ErrStopped = errors.New("replica: follower stopped")

type (
	stateReq struct{ reply chan state.State }
	subReq   struct {
		after ids.Index
		reply chan chan event.IndexedEvent
	}
	// incoming carries what the connection goroutine read.
	incoming struct {
		f   frame
		err error // the connection ended
	}
)

type followerLoop struct {
	f      *Follower
	st     state.State
	subs   []*localSub
	recent []event.IndexedEvent
	fresh  bool
}

type localSub struct {
	after ids.Index
	ch    chan event.IndexedEvent
}

// Run follows the master until ctx ends, reconnecting as needed.
func (f *Follower) Run(ctx context.Context) error {
	defer close(f.done)
	l := &followerLoop{f: f, st: f.cfg.State, fresh: f.cfg.Fresh}
	defer l.closeSubs()
	in := make(chan incoming, 256)
	var (
		connCancel context.CancelFunc
		connDone   chan struct{}
		retry      <-chan time.Time
	)
	start := func() {
		cctx, cancel := context.WithCancel(ctx)
		connCancel, connDone = cancel, make(chan struct{})
		go func(h hello, done chan struct{}) {
			defer close(done)
			f.follow(cctx, h, in)
		}(hello{Op: opFollow, After: uint64(l.st.LastIndex), AfterTerm: uint64(l.st.Term), AfterMaster: string(l.st.Master), Fresh: l.fresh}, connDone)
	}
	stop := func() {
		if connCancel != nil {
			connCancel()
			<-connDone
			connCancel = nil
			// Drop what the old connection left queued.
			for len(in) > 0 {
				<-in
			}
		}
	}
	defer stop()
	start()
	heal := time.NewTicker(f.cfg.HealEvery)
	defer heal.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-heal.C:
			l.heal()
		case <-retry:
			retry = nil
			start()
		case m := <-in:
			if m.err != nil {
				stop()
				if ctx.Err() == nil {
					f.cfg.Logger.Debug("lost the master; reconnecting", "err", m.err)
				}
				retry = time.After(f.cfg.RetryDelay)
				continue
			}
			if err := l.apply(m.f); err != nil {
				f.cfg.Logger.Warn("cannot apply the master's log; resyncing from a snapshot", "err", err)
				l.fresh = true
				stop()
				retry = time.After(f.cfg.RetryDelay)
			}
		case r := <-f.reqs:
			l.serve(r)
		}
	}
}

// follow reads one follow stream into in until it fails.
func (f *Follower) follow(ctx context.Context, h hello, in chan<- incoming) {
	send := func(m incoming) {
		select {
		case in <- m:
		case <-ctx.Done():
		}
	}
	st, err := f.cfg.Dial(ctx)
	if err != nil {
		send(incoming{err: err})
		return
	}
	defer st.Close()
	go func() { <-ctx.Done(); st.Close() }()
	if err := writeFrame(st, h); err != nil {
		send(incoming{err: err})
		return
	}
	for {
		var fr frame
		if err := readFrame(st, &fr); err != nil {
			send(incoming{err: err})
			return
		}
		send(incoming{f: fr})
		if ctx.Err() != nil {
			return
		}
	}
}

func (l *followerLoop) apply(fr frame) error {
	switch {
	case fr.Snapshot != nil:
		snap, err := state.Decode(fr.Snapshot)
		if err != nil {
			return err
		}
		if old := l.st.LastIndex; old > 0 {
			l.f.cfg.Logger.Warn("installing the master's snapshot; this node's own log is discarded",
				"own_last_index", old, "own_term", l.st.Term, "master_index", snap.LastIndex, "master_term", snap.Term)
		}
		l.raiseTerm(snap.Term)
		if err := l.f.cfg.Log.Reset(uint64(snap.LastIndex), fr.Snapshot); err != nil {
			return fmt.Errorf("reset the local log: %w", err)
		}
		l.st = snap
		l.fresh = false
		l.recent = l.recent[:0]
		// Local subscribers hold a view the snapshot replaced: they resync.
		l.closeSubs()
		return nil
	case fr.Event != nil:
		ie, err := event.DecodeIndexed(fr.Event)
		if err != nil {
			return err
		}
		if ie.Index <= l.st.LastIndex {
			return nil // already held (a reconnect overlapped)
		}
		next, err := state.Apply(l.st, ie)
		if err != nil {
			return err
		}
		l.raiseTerm(ie.Term)
		if err := l.f.cfg.Log.Append(uint64(ie.Index), fr.Event); err != nil {
			return fmt.Errorf("append to the local log: %w", err)
		}
		l.st = next
		l.fresh = false
		l.publish(ie)
		return nil
	}
	return fmt.Errorf("%w: a follow frame with neither snapshot nor event", ErrFrame)
}

// heal has the log check its disk (see master.Healer).
func (l *followerLoop) heal() {
	h, ok := l.f.cfg.Log.(healer)
	if !ok {
		return
	}
	if err := h.Heal(func() ([]byte, error) { return state.Encode(l.st) }); err != nil {
		l.f.cfg.Logger.Warn("the event log could not resume writing; events are still only counted", "err", err)
	}
}

// raiseTerm stores a term the follower takes, before its log holds it. A
// failure (a full disk, which the node's health reports) does not stop the
// follower: the term is then at risk only if this node restarts alone.
func (l *followerLoop) raiseTerm(term ids.Term) {
	if l.f.cfg.Terms == nil || term <= l.st.Term {
		return
	}
	if err := l.f.cfg.Terms.Raise(uint64(term)); err != nil {
		l.f.cfg.Logger.Error("cannot store the master's term", "term", term, "err", err)
	}
}

func (l *followerLoop) serve(r any) {
	switch r := r.(type) {
	case stateReq:
		r.reply <- l.st
	case subReq:
		s := &localSub{after: r.after, ch: make(chan event.IndexedEvent, subscriberQueue)}
		for _, ie := range l.recent {
			if ie.Index <= s.after {
				continue
			}
			select {
			case s.ch <- ie:
			default:
				close(s.ch)
				r.reply <- s.ch
				return
			}
		}
		l.subs = append(l.subs, s)
		r.reply <- s.ch
	}
}

func (l *followerLoop) publish(ie event.IndexedEvent) {
	l.recent = append(l.recent, ie)
	if len(l.recent) > retainedTail {
		l.recent = append(l.recent[:0], l.recent[len(l.recent)-retainedTail/2:]...)
	}
	kept := l.subs[:0]
	for _, s := range l.subs {
		select {
		case s.ch <- ie:
			kept = append(kept, s)
		default:
			close(s.ch)
		}
	}
	l.subs = kept
}

func (l *followerLoop) closeSubs() {
	for _, s := range l.subs {
		close(s.ch)
	}
	l.subs = nil
}

func (f *Follower) call(ctx context.Context, r any) error {
	select {
	case f.reqs <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-f.done:
		return ErrStopped
	}
}

// State returns the follower's current State.
func (f *Follower) State(ctx context.Context) (state.State, error) {
	r := stateReq{reply: make(chan state.State, 1)}
	if err := f.call(ctx, r); err != nil {
		return state.State{}, err
	}
	return <-r.reply, nil
}

// Subscribe returns the events after `after`, then live ones, as the master's
// Subscribe does. The channel closes when the subscriber falls behind or a
// snapshot replaces the State; resubscribe from State().
func (f *Follower) Subscribe(ctx context.Context, after ids.Index) (<-chan event.IndexedEvent, error) {
	r := subReq{after: after, reply: make(chan chan event.IndexedEvent, 1)}
	if err := f.call(ctx, r); err != nil {
		return nil, err
	}
	return <-r.reply, nil
}

// Execute forwards a command to the master.
func (f *Follower) Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error) {
	b, err := event.EncodeCommand(cmd)
	if err != nil {
		return nil, err
	}
	reply, err := f.roundTrip(ctx, opCommand, frame{Command: b})
	if err != nil {
		return nil, err
	}
	out := make([]event.IndexedEvent, 0, len(reply.Events))
	for _, e := range reply.Events {
		ie, err := event.DecodeIndexed(e)
		if err != nil {
			return nil, err
		}
		out = append(out, ie)
	}
	return out, nil
}

// Report forwards a worker's local fact to the master; the master takes the
// source from the authenticated connection.
func (f *Follower) Report(ctx context.Context, _ event.Source, ev event.Event) error {
	b, err := event.EncodeEvent(ev)
	if err != nil {
		return err
	}
	_, err = f.roundTrip(ctx, opReport, frame{Report: b})
	return err
}

// forwardTimeout bounds one forwarded command: a master that died with the
// connection still open must not hold the caller until transport health
// checks notice.
const forwardTimeout = 10 * time.Second

func (f *Follower) roundTrip(ctx context.Context, op string, req frame) (frame, error) {
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	// A follower that stops (its node changes role) abandons what it
	// forwards; the caller retries against the new role.
	go func() {
		select {
		case <-f.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	st, err := f.cfg.Dial(ctx)
	if err != nil {
		if f.stopped() {
			return frame{}, ErrStopped
		}
		return frame{}, fmt.Errorf("replica: no master to send to: %w", err)
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	if err := writeFrame(st, hello{Op: op}); err != nil {
		return frame{}, err
	}
	if err := writeFrame(st, req); err != nil {
		return frame{}, err
	}
	var reply frame
	if err := readFrame(st, &reply); err != nil {
		if f.stopped() {
			return frame{}, ErrStopped
		}
		if ctx.Err() != nil {
			return frame{}, ctx.Err()
		}
		return frame{}, fmt.Errorf("replica: the master did not answer: %w", err)
	}
	if reply.Err != nil {
		return frame{}, fromWire(reply.Err)
	}
	return reply, nil
}

func (f *Follower) stopped() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}
