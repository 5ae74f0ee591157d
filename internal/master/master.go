// Package master is the control plane's single writer. One goroutine owns
// the State and the event log: it turns commands into events (decide), admits
// workers' local facts against the allowlist, trial-applies each event,
// appends it to the log, applies it, and fans the indexed event out to
// subscribers.
package master

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"time"

	"github.com/skulk/skulk/internal/catalog"
	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
	"github.com/skulk/skulk/internal/placement"
	"github.com/skulk/skulk/internal/state"
)

// Log is the durable event log as the master uses it (internal/eventlog).
type Log interface {
	Append(index uint64, payload []byte) error
	LastIndex() uint64
	SaveSnapshot(index uint64, blob []byte) error
}

// Config wires the master to its surroundings.
type Config struct {
	Node ids.NodeID
	Log  Log
	// State is the recovered State (snapshot plus replayed log).
	State state.State
	// Term is the term an election won (0 outside a cluster): the master
	// starts by indexing MasterElected in it, which fences the old master.
	Term ids.Term
	// Restarted says this process just started (not a failover within a
	// running cluster): tasks the State holds in flight died with the old
	// processes and are failed.
	Restarted bool
	Now       func() time.Time
	// Card looks a model up in the catalog.
	Card func(ids.ModelID) (catalog.Card, bool)
	// Nodes reports the current resources of the live nodes.
	Nodes func() []placement.Node
	// MaxInstancesPerModel bounds the instances of one model in the cluster
	// while this node is master (0 = placement.DefaultMaxInstancesPerModel).
	MaxInstancesPerModel int
	// SnapshotEvery saves a snapshot after this many events (0 = 1024).
	SnapshotEvery int
	// HealEvery is how often the log's disk is checked (Healer), so a
	// filling disk is noticed and a freed one written to again (0 = 2 s).
	HealEvery time.Duration
	Logger    *slog.Logger
}

// Healer is the part of the event log that checks its disk on a timer
// (eventlog.Log.Heal): it degrades the log under the free-space floor and,
// when a degraded log's disk has room again, resumes writing from a
// snapshot of the owner's state at the log's last index.
type Healer interface {
	Heal(snapshot func() ([]byte, error)) error
}

// DefaultHealEvery is how often the master and followers check the log's
// disk.
const DefaultHealEvery = 2 * time.Second

// subscriberQueue bounds each subscriber's backlog; a subscriber that falls
// further behind is dropped and must resubscribe from its last index.
const subscriberQueue = 1024

// Master owns the State and the log. Its methods are safe for concurrent
// use; they talk to the owner goroutine started by Run.
type Master struct {
	cfg  Config
	reqs chan request
	done chan struct{}
}

type request struct {
	cmd    event.Command    // a command to decide, or
	ev     event.Event      // a local fact to admit
	source event.Source     // who submitted ev
	sub    *subscriber      // a subscription to register
	read   chan state.State // a State read
	reply  chan reply
}

type reply struct {
	events   []event.IndexedEvent
	snapshot *state.State
	err      error
}

type subscriber struct {
	after ids.Index
	ch    chan event.IndexedEvent
	// remote subscribers (followers) name the term of their last event and
	// the master their State names there; when the master cannot continue
	// that log it sends a snapshot.
	remote      bool
	afterTerm   ids.Term
	afterMaster ids.NodeID
}

// New returns a master for cfg; call Run to start it.
func New(cfg Config) *Master {
	if cfg.SnapshotEvery <= 0 {
		cfg.SnapshotEvery = 1024
	}
	if cfg.HealEvery <= 0 {
		cfg.HealEvery = DefaultHealEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Master{cfg: cfg, reqs: make(chan request), done: make(chan struct{})}
}

// ErrStopped is returned by calls made after the master stopped.
var ErrStopped = errors.New("master: stopped")

// Run owns the State until ctx ends.
func (m *Master) Run(ctx context.Context) error {
	defer close(m.done)
	l := &loop{cfg: m.cfg, st: m.cfg.State, recent: nil}
	defer l.closeSubscribers()
	if err := l.bootstrap(); err != nil {
		return err
	}
	heal := time.NewTicker(m.cfg.HealEvery)
	defer heal.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-m.reqs:
			l.serve(r)
		case <-heal.C:
			l.heal()
		}
	}
}

func (m *Master) call(ctx context.Context, r request) (reply, error) {
	r.reply = make(chan reply, 1)
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

// Execute decides a command and returns the events it indexed.
func (m *Master) Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error) {
	if err := cmd.Validate(); err != nil {
		return nil, infer.Errorf(infer.ClassInvalid, "%v", err)
	}
	rep, err := m.call(ctx, request{cmd: cmd})
	return rep.events, err
}

// Report admits a worker's local fact.
func (m *Master) Report(ctx context.Context, source event.Source, ev event.Event) error {
	_, err := m.call(ctx, request{ev: ev, source: source})
	return err
}

// State returns the current State. States are immutable values.
func (m *Master) State(ctx context.Context) (state.State, error) {
	ch := make(chan state.State, 1)
	if _, err := m.call(ctx, request{read: ch}); err != nil {
		return state.State{}, err
	}
	return <-ch, nil
}

// Subscribe returns the events after index `after`, then live ones. The
// channel closes when the master stops or the subscriber falls more than
// subscriberQueue events behind; resubscribe from the last index seen.
func (m *Master) Subscribe(ctx context.Context, after ids.Index) (<-chan event.IndexedEvent, error) {
	s := &subscriber{after: after, ch: make(chan event.IndexedEvent, subscriberQueue)}
	if _, err := m.call(ctx, request{sub: s}); err != nil {
		return nil, err
	}
	return s.ch, nil
}

// Follow is Subscribe for a follower whose log ends at (afterTerm, after):
// when the master's retained tail continues that log the events after it
// follow; otherwise (the follower is too far behind, or its log diverged in
// a term this master does not share) snapshot is the master's State and the
// events after it follow.
//
// (index, term, master) names one history: within a term a master appends
// alone, and two nodes that both claimed a term (before they saw each
// other) differ in the master.
func (m *Master) Follow(ctx context.Context, after ids.Index, afterTerm ids.Term, afterMaster ids.NodeID) (snapshot *state.State, events <-chan event.IndexedEvent, err error) {
	s := &subscriber{after: after, afterTerm: afterTerm, afterMaster: afterMaster, remote: true, ch: make(chan event.IndexedEvent, subscriberQueue)}
	rep, err := m.call(ctx, request{sub: s})
	if err != nil {
		return nil, nil, err
	}
	return rep.snapshot, s.ch, nil
}

// loop is the state the owner goroutine holds.
type loop struct {
	cfg    Config
	st     state.State
	subs   []*subscriber
	recent []event.IndexedEvent // the retained tail served to new subscribers
	// masters[i] is the State's master after recent[i].
	masters []ids.NodeID
	since   int // events since the last snapshot
}

// retainedTail bounds the events kept in memory for subscribers that join
// late; older history is in the snapshot a joining replica starts from.
const retainedTail = 16384

func (l *loop) serve(r request) {
	switch {
	case r.read != nil:
		r.read <- l.st
		r.reply <- reply{}
	case r.sub != nil:
		r.reply <- reply{snapshot: l.addSubscriber(r.sub)}
	case r.cmd != nil:
		evs, err := decide(l.st, r.cmd, l.inputs())
		if err != nil {
			r.reply <- reply{err: err}
			return
		}
		out, err := l.commit(evs)
		r.reply <- reply{events: out, err: err}
	default:
		if err := event.Admit(r.source, r.ev); err != nil {
			r.reply <- reply{err: infer.Errorf(infer.ClassInvalid, "%v", err)}
			return
		}
		out, err := l.commit([]event.Event{r.ev})
		r.reply <- reply{events: out, err: err}
	}
}

func (l *loop) inputs() inputs {
	in := inputs{master: l.cfg.Node, nowMs: l.cfg.Now().UnixMilli(), card: l.cfg.Card, maxPerModel: l.cfg.MaxInstancesPerModel}
	if l.cfg.Nodes != nil {
		in.nodes = l.cfg.Nodes()
	}
	return in
}

// commit trial-applies the events in order, and only when all apply, appends
// and publishes them. A rejected batch changes nothing.
func (l *loop) commit(evs []event.Event) ([]event.IndexedEvent, error) {
	next := l.st
	out := make([]event.IndexedEvent, 0, len(evs))
	masters := make([]ids.NodeID, 0, len(evs))
	for _, ev := range evs {
		ie := event.IndexedEvent{Term: next.Term, Index: next.LastIndex + 1, Event: ev}
		if me, ok := ev.(event.MasterElected); ok {
			ie.Term = me.Term
		}
		s, err := state.Apply(next, ie)
		if err != nil {
			return nil, infer.Errorf(infer.ClassConflict, "%v", err)
		}
		next = s
		out = append(out, ie)
		masters = append(masters, s.Master)
	}
	for _, ie := range out {
		b, err := event.EncodeIndexed(ie)
		if err != nil {
			return nil, fmt.Errorf("master: encode event %d: %w", ie.Index, err)
		}
		// The log degrades to counting on write errors and reports that
		// itself; an error here means the index sequence broke.
		if err := l.cfg.Log.Append(uint64(ie.Index), b); err != nil {
			return nil, fmt.Errorf("master: append event %d: %w", ie.Index, err)
		}
	}
	l.st = next
	for i, ie := range out {
		l.publish(ie, masters[i])
	}
	l.since += len(out)
	if l.since >= l.cfg.SnapshotEvery {
		l.snapshot()
	}
	return out, nil
}

func (l *loop) snapshot() {
	blob, err := state.Encode(l.st)
	if err == nil {
		err = l.cfg.Log.SaveSnapshot(uint64(l.st.LastIndex), blob)
	}
	if err != nil {
		l.cfg.Logger.Warn("snapshot failed; the log still holds every event", "index", l.st.LastIndex, "err", err)
		return
	}
	l.since = 0
}

// heal has the log check its disk; resuming after a degraded spell stores
// the State as the snapshot, so every event counted meanwhile is kept.
func (l *loop) heal() {
	h, ok := l.cfg.Log.(Healer)
	if !ok {
		return
	}
	if err := h.Heal(func() ([]byte, error) { return state.Encode(l.st) }); err != nil {
		l.cfg.Logger.Warn("the event log could not resume writing; events are still only counted", "err", err)
		return
	}
	l.since = 0
}

func (l *loop) publish(ie event.IndexedEvent, master ids.NodeID) {
	l.recent = append(l.recent, ie)
	l.masters = append(l.masters, master)
	if len(l.recent) > retainedTail {
		l.recent = append(l.recent[:0], l.recent[len(l.recent)-retainedTail/2:]...)
		l.masters = append(l.masters[:0], l.masters[len(l.masters)-retainedTail/2:]...)
	}
	kept := l.subs[:0]
	for _, s := range l.subs {
		select {
		case s.ch <- ie:
			kept = append(kept, s)
		default:
			close(s.ch) // too far behind: it resubscribes from its last index
		}
	}
	l.subs = kept
}

// addSubscriber registers s and queues its backlog; for a remote
// subscriber whose log the retained tail cannot continue it returns the
// State to send as a snapshot instead.
func (l *loop) addSubscriber(s *subscriber) *state.State {
	if s.remote && !l.continues(s.after, s.afterTerm, s.afterMaster) {
		snap := l.st
		s.after = l.st.LastIndex
		l.subs = append(l.subs, s)
		return &snap
	}
	for _, ie := range l.recent {
		if ie.Index <= s.after {
			continue
		}
		select {
		case s.ch <- ie:
		default:
			close(s.ch)
			return nil
		}
	}
	l.subs = append(l.subs, s)
	return nil
}

// continues reports whether the retained tail holds the event at after with
// term afterTerm (or after is 0 and the tail starts at the beginning), and
// the backlog after it fits one subscriber queue.
func (l *loop) continues(after ids.Index, afterTerm ids.Term, afterMaster ids.NodeID) bool {
	if after > l.st.LastIndex || l.st.LastIndex-after >= subscriberQueue {
		return false
	}
	if after == 0 {
		return len(l.recent) > 0 && l.recent[0].Index == 1 || l.st.LastIndex == 0
	}
	i := sort.Search(len(l.recent), func(i int) bool { return l.recent[i].Index >= after })
	return i < len(l.recent) && l.recent[i].Index == after && l.recent[i].Term == afterTerm && l.masters[i] == afterMaster
}

func (l *loop) closeSubscribers() {
	for _, s := range l.subs {
		close(s.ch)
	}
	l.subs = nil
}

// bootstrap makes this node the master of a fresh log, registers it, and
// after a restart stops its own previous runners and fails the tasks the
// State holds in flight. (Other nodes' workers stop their own previous runners.)
func (l *loop) bootstrap() error {
	var evs []event.Event
	if l.st.Master != l.cfg.Node || l.cfg.Term > l.st.Term {
		evs = append(evs, event.MasterElected{Node: l.cfg.Node, Term: max(l.cfg.Term, l.st.Term+1)})
	}
	if _, ok := l.st.Nodes[l.cfg.Node]; !ok {
		evs = append(evs, event.NodeJoined{Node: l.cfg.Node, AtUnixMs: l.cfg.Now().UnixMilli()})
	}
	if l.cfg.Restarted {
		// In the same commit as the election, so no reader of the new
		// term sees this node's previous runners as ready.
		for _, ev := range l.st.RunnersRestarted(l.cfg.Node) {
			evs = append(evs, ev)
		}
	}
	if len(evs) > 0 {
		if _, err := l.commit(evs); err != nil {
			return fmt.Errorf("master: bootstrap: %w", err)
		}
	}
	var settle []event.Event
	if l.cfg.Restarted {
		for _, id := range sortedTasks(l.st) {
			settle = append(settle, event.TaskFinished{Task: id, Node: l.cfg.Node, Outcome: event.OutcomeFailed, Reason: "the node restarted while the task ran"})
		}
	}
	for _, ev := range settle {
		if _, err := l.commit([]event.Event{ev}); err != nil {
			l.cfg.Logger.Warn("could not settle state left by the previous process", "event", ev.Kind(), "err", err)
		}
	}
	return nil
}

func sortedTasks(s state.State) []ids.TaskID {
	out := make([]ids.TaskID, 0, len(s.Tasks))
	for id := range s.Tasks {
		out = append(out, id)
	}
	sortIDs(out)
	return out
}
