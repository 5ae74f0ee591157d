package plane

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/fxamacker/cbor/v2"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	pb "go.etcd.io/raft/v3/raftpb"
)

// batch is one raft entry: events a master decided together, applied all
// or none. ID lets the proposer recognise its own entry when it commits.
type batch struct {
	ID     uint64   `cbor:"1,keyasint"`
	Events [][]byte `cbor:"2,keyasint"`
}

// Member is a cluster member as the replicated configuration knows it: who
// it is and where it gossips, so that a restarted node finds the others
// with no flags.
type Member struct {
	Node   ids.NodeID `cbor:"1,keyasint" json:"node"`
	Gossip string     `cbor:"2,keyasint" json:"gossip,omitempty"`
}

// machineData is a snapshot of the machine.
type machineData struct {
	Cluster string            `cbor:"1,keyasint"`
	State   []byte            `cbor:"2,keyasint"`
	Members map[uint64]Member `cbor:"3,keyasint"`
}

// machine is the State every node applies from the committed log. The raft
// driver's goroutine writes it; readers take immutable views.
type machine struct {
	logger *slog.Logger
	view   atomic.Pointer[view]

	mu      sync.Mutex // guards what follows
	waiters map[uint64]chan applied
	subs    []*subscriber
	recent  []event.IndexedEvent
}

// view is the machine as of one applied raft index.
type view struct {
	State   state.State
	Cluster string
	Members map[uint64]Member
	Conf    *pb.ConfState
	Index   uint64 // raft index
	Term    uint64 // raft term of the entry at Index
}

// applied is what a proposer learns when its entry commits.
type applied struct {
	events []event.IndexedEvent
	err    error
}

type subscriber struct {
	ch chan event.IndexedEvent
}

// subscriberQueue bounds each subscriber's backlog; a subscriber that falls
// further behind is dropped and resubscribes from the State.
const subscriberQueue = 1024

// retainedTail bounds the events kept for subscribers that join late.
const retainedTail = 4096

func newMachine(logger *slog.Logger) *machine {
	m := &machine{logger: logger, waiters: map[uint64]chan applied{}}
	m.view.Store(&view{Members: map[uint64]Member{}, Conf: &pb.ConfState{}})
	return m
}

func (m *machine) current() *view { return m.view.Load() }

// Apply applies one committed batch. A batch that does not apply (it
// cannot, unless a master decided against a stale State) is skipped whole
// on every node alike.
func (m *machine) Apply(index, term uint64, data []byte) {
	v := *m.current()
	v.Index, v.Term = index, term
	var b batch
	out, err := []event.IndexedEvent(nil), cbor.Unmarshal(data, &b)
	next := v.State
	for i := 0; err == nil && i < len(b.Events); i++ {
		var ev event.Event
		if ev, err = event.DecodeEvent(b.Events[i]); err != nil {
			break
		}
		ie := event.IndexedEvent{Term: ids.Term(term), Index: next.LastIndex + 1, Event: ev}
		var s state.State
		if s, err = state.Apply(next, ie); err == nil {
			next = s
			out = append(out, ie)
		}
	}
	if err != nil {
		m.logger.Warn("a committed batch does not apply to the State; skipped on every node", "raft_index", index, "err", err)
		out = nil
		err = fault.Errorf(fault.ClassConflict, "%v", err)
	} else {
		v.State = next
	}
	m.view.Store(&v)
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.waiters[b.ID]; ok && b.ID != 0 {
		delete(m.waiters, b.ID)
		w <- applied{events: out, err: err}
	}
	for _, ie := range out {
		m.publish(ie)
	}
}

// ConfChanged records a member's address from the change's context.
func (m *machine) ConfChanged(index uint64, cc *pb.ConfChange, cs *pb.ConfState) {
	v := *m.current()
	v.Index, v.Conf = index, cs
	v.Members = maps.Clone(v.Members)
	switch cc.GetType() {
	case pb.ConfChangeType_ConfChangeRemoveNode:
		delete(v.Members, cc.GetNodeId())
	default:
		var mb Member
		if len(cc.GetContext()) > 0 && cbor.Unmarshal(cc.GetContext(), &mb) == nil && mb.Node != "" {
			v.Members[cc.GetNodeId()] = mb
		}
	}
	m.view.Store(&v)
}

// Restore replaces the machine by a snapshot; subscribers start over from
// the new State and proposers waiting learn nothing certain.
func (m *machine) Restore(index, term uint64, cs *pb.ConfState, data []byte) error {
	var d machineData
	if err := cbor.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("controlplane: snapshot: %w", err)
	}
	st, err := state.Decode(d.State)
	if err != nil {
		return err
	}
	if d.Members == nil {
		d.Members = map[uint64]Member{}
	}
	m.view.Store(&view{State: st, Cluster: d.Cluster, Members: d.Members, Conf: cs, Index: index, Term: term})
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.subs {
		close(s.ch)
	}
	m.subs, m.recent = nil, nil
	for id, w := range m.waiters {
		delete(m.waiters, id)
		w <- applied{err: errOutcomeUnknown}
	}
	return nil
}

// Snapshot encodes the machine.
func (m *machine) Snapshot() ([]byte, error) {
	v := m.current()
	return encodeMachine(v.Cluster, v.State, v.Members)
}

func encodeMachine(cluster string, st state.State, members map[uint64]Member) ([]byte, error) {
	sb, err := state.Encode(st)
	if err != nil {
		return nil, err
	}
	return cbor.Marshal(machineData{Cluster: cluster, State: sb, Members: members})
}

// wait registers a proposer's batch id; the channel receives the outcome.
func (m *machine) wait(id uint64) chan applied {
	ch := make(chan applied, 1)
	m.mu.Lock()
	m.waiters[id] = ch
	m.mu.Unlock()
	return ch
}

func (m *machine) forget(id uint64) {
	m.mu.Lock()
	delete(m.waiters, id)
	m.mu.Unlock()
}

// errOutcomeUnknown: the proposal may or may not commit later.
var errOutcomeUnknown = errors.New("controlplane: the outcome of the proposal is unknown")

// publish hands ie to subscribers; m.mu is held.
func (m *machine) publish(ie event.IndexedEvent) {
	m.recent = append(m.recent, ie)
	if len(m.recent) > retainedTail {
		m.recent = slices.Clone(m.recent[len(m.recent)-retainedTail/2:])
	}
	kept := m.subs[:0]
	for _, s := range m.subs {
		select {
		case s.ch <- ie:
			kept = append(kept, s)
		default:
			close(s.ch) // too far behind: it resubscribes from the State
		}
	}
	m.subs = kept
}

// subscribe returns the events after `after`, then live ones. When the
// retained tail cannot continue from after, the channel is closed at once:
// the subscriber starts over from the State.
func (m *machine) subscribe(after ids.Index) <-chan event.IndexedEvent {
	s := &subscriber{ch: make(chan event.IndexedEvent, subscriberQueue)}
	m.mu.Lock()
	defer m.mu.Unlock()
	last := m.current().State.LastIndex
	switch {
	case after > last:
		// A State from before a snapshot restore; start over.
		close(s.ch)
		return s.ch
	case after < last:
		i := sort.Search(len(m.recent), func(i int) bool { return m.recent[i].Index > after })
		if i == len(m.recent) || m.recent[i].Index != after+1 || len(m.recent)-i > subscriberQueue {
			close(s.ch)
			return s.ch
		}
		for _, ie := range m.recent[i:] {
			s.ch <- ie
		}
	}
	m.subs = append(m.subs, s)
	return s.ch
}

// closeSubscribers ends every subscription (the node stops).
func (m *machine) closeSubscribers() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.subs {
		close(s.ch)
	}
	m.subs = nil
}
