package dataplane

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// LeaseRequest asks the ArenaManager for a ring range.
type LeaseRequest struct {
	Edge EdgeID
	Spec RingSpec
}

// Lease is a live ring range. Its layout has an initialised ring header.
type Lease struct {
	Edge   EdgeID
	Layout RingLayout
}

// PumpStopped is the driver's fact that no pump touches a ring any more.
type PumpStopped struct {
	Edge EdgeID
	Ring RingID
}

// RingQuiesced is the worker side's fact that it no longer reads or writes
// a ring: it uninstalled the ring and its copies ended, or its process was
// reaped.
type RingQuiesced struct {
	Ring       RingID
	Generation Generation
}

// QuiescenceProof is the only thing that releases a lease. It can be made
// only from both facts about the same ring.
type QuiescenceProof struct {
	ring RingID
}

// ProveQuiescence combines the pump and worker facts for one ring.
func ProveQuiescence(p PumpStopped, q RingQuiesced) (QuiescenceProof, error) {
	if p.Ring == 0 || p.Ring != q.Ring {
		return QuiescenceProof{}, fmt.Errorf("%w: pump stopped ring %d, worker quiesced ring %d", ErrNoQuiescence, p.Ring, q.Ring)
	}
	return QuiescenceProof{ring: p.Ring}, nil
}

// ManagerConfig configures an ArenaManager.
type ManagerConfig struct {
	// Memory is the arena mapping the manager writes ring headers into; its
	// length is the reservation ceiling.
	Memory   []byte
	Identity Identity
	Logger   *slog.Logger
}

// ArenaStats is a snapshot of the manager's tables.
type ArenaStats struct {
	Live      int
	Queued    int
	FreeBytes uint64
	Ceiling   uint64
}

type leaseReply struct {
	lease Lease
	err   error
}

type leaseMsg struct {
	id    uint64
	req   LeaseRequest
	reply chan leaseReply // buffered: the manager never blocks on a caller
}

type cancelMsg struct {
	id   uint64
	done chan struct{}
}

type releaseMsg struct {
	proof QuiescenceProof
	reply chan error
}

// ArenaManager mints non-overlapping ring ranges in the arena. One goroutine
// owns the free list, the pending queue and the live lease table, so two
// live leases cannot overlap.
type ArenaManager struct {
	leases   chan leaseMsg
	cancels  chan cancelMsg
	releases chan releaseMsg
	stats    chan chan ArenaStats
	quit     chan struct{}
	wg       sync.WaitGroup
	nextReq  chan uint64
	closeOne sync.Once
}

// NewArenaManager starts a manager over cfg.Memory; Close stops it.
func NewArenaManager(cfg ManagerConfig) *ArenaManager {
	m := &ArenaManager{
		leases:   make(chan leaseMsg),
		cancels:  make(chan cancelMsg),
		releases: make(chan releaseMsg),
		stats:    make(chan chan ArenaStats),
		quit:     make(chan struct{}),
		nextReq:  make(chan uint64),
	}
	st := &managerState{
		mem:     cfg.Memory,
		free:    newFreeList(0, uint64(len(cfg.Memory))),
		live:    make(map[RingID]Lease),
		nextID:  1,
		obs:     newObserver(cfg.Logger, cfg.Identity),
		ceiling: uint64(len(cfg.Memory)),
	}
	m.wg.Go(func() { m.run(st) })
	return m
}

// managerState is owned by the manager goroutine.
type managerState struct {
	mem     []byte
	ceiling uint64
	free    freeList
	live    map[RingID]Lease
	queue   []leaseMsg
	nextID  RingID
	nextReq uint64
	obs     observer
}

func (m *ArenaManager) run(st *managerState) {
	for {
		select {
		case m.nextReq <- st.nextReq + 1:
			st.nextReq++
		case msg := <-m.leases:
			st.lease(msg)
		case msg := <-m.cancels:
			st.cancel(msg.id)
			close(msg.done)
		case msg := <-m.releases:
			msg.reply <- st.release(msg.proof)
		case reply := <-m.stats:
			reply <- ArenaStats{Live: len(st.live), Queued: len(st.queue), FreeBytes: st.free.free(), Ceiling: st.ceiling}
		case <-m.quit:
			for _, q := range st.queue {
				q.reply <- leaseReply{err: ErrArenaShutdown}
			}
			return
		}
	}
}

func (st *managerState) lease(msg leaseMsg) {
	spec := msg.req.Spec
	need := RingFootprint(spec.DataCapacity)
	reject := func(detail string) {
		st.obs.emit(slog.LevelWarn, EventRingLeaseRejected, edgeAttr(msg.req.Edge), reasonAttr(detail))
		msg.reply <- leaseReply{err: &LeaseRejectedError{Requested: need, Ceiling: st.ceiling, Detail: detail}}
	}
	switch {
	case spec.DataCapacity == 0 || spec.DataCapacity%RingAlignment != 0:
		reject(fmt.Sprintf("data capacity %d is not a positive multiple of %d", spec.DataCapacity, RingAlignment))
		return
	case spec.Alignment != 0 && (spec.Alignment&(spec.Alignment-1) != 0 || spec.Alignment > RingAlignment):
		reject(fmt.Sprintf("alignment %d unsupported (power of two up to %d)", spec.Alignment, RingAlignment))
		return
	case need > st.ceiling || spec.DataCapacity > st.ceiling:
		reject("larger than the arena ceiling")
		return
	}
	if len(st.queue) == 0 && st.grant(msg) {
		return
	}
	st.obs.emit(slog.LevelInfo, EventRingLeaseQueued, edgeAttr(msg.req.Edge), slog.Uint64("bytes", need))
	st.queue = append(st.queue, msg)
}

// grant leases a range for msg if one fits now.
func (st *managerState) grant(msg leaseMsg) bool {
	need := RingFootprint(msg.req.Spec.DataCapacity)
	off, ok := st.free.take(need)
	if !ok {
		return false
	}
	l := Lease{Edge: msg.req.Edge, Layout: NewRingLayout(st.nextID, off, msg.req.Spec.DataCapacity)}
	st.nextID++
	if err := InitRing(st.mem, l.Layout); err != nil {
		// The free list only holds arena ranges, so this is a manager bug;
		// refuse rather than hand out a broken ring.
		_ = st.free.put(span{off, need})
		msg.reply <- leaseReply{err: err}
		return true
	}
	st.live[l.Layout.RingID] = l
	st.obs.emit(slog.LevelInfo, EventRingLeased, edgeAttr(l.Edge), ringAttr(l.Layout.RingID),
		slog.Uint64("arena_offset", off), slog.Uint64("bytes", need))
	msg.reply <- leaseReply{lease: l}
	return true
}

// cancel drops a queued request, or frees the range if the grant raced the
// cancellation and was never delivered.
func (st *managerState) cancel(id uint64) {
	for i, q := range st.queue {
		if q.id == id {
			st.queue = append(st.queue[:i], st.queue[i+1:]...)
			return
		}
	}
}

func (st *managerState) release(p QuiescenceProof) error {
	if p.ring == 0 {
		return ErrNoQuiescence
	}
	l, ok := st.live[p.ring]
	if !ok {
		return fmt.Errorf("%w %d", ErrUnknownLease, p.ring)
	}
	if err := st.free.put(span{l.Layout.ArenaOffset, l.Layout.TotalLen}); err != nil {
		return err
	}
	delete(st.live, p.ring)
	st.obs.emit(slog.LevelInfo, EventRingReleased, edgeAttr(l.Edge), ringAttr(p.ring))
	// Retry queued leases in arrival order; stop at the first that still does
	// not fit so a large request is not starved by later small ones.
	for len(st.queue) > 0 && st.grant(st.queue[0]) {
		st.queue = st.queue[1:]
	}
	return nil
}

// Lease returns a ring range for req, waiting while the arena is
// temporarily full. A request that can never fit fails at once with
// *LeaseRejectedError. Cancelling ctx cancels a queued request.
func (m *ArenaManager) Lease(ctx context.Context, req LeaseRequest) (Lease, error) {
	var id uint64
	select {
	case id = <-m.nextReq:
	case <-m.quit:
		return Lease{}, ErrArenaShutdown
	case <-ctx.Done():
		return Lease{}, ctx.Err()
	}
	msg := leaseMsg{id: id, req: req, reply: make(chan leaseReply, 1)}
	select {
	case m.leases <- msg:
	case <-m.quit:
		return Lease{}, ErrArenaShutdown
	case <-ctx.Done():
		return Lease{}, ctx.Err()
	}
	select {
	case r := <-msg.reply:
		return r.lease, r.err
	case <-m.quit:
		return Lease{}, ErrArenaShutdown
	case <-ctx.Done():
	}
	done := make(chan struct{})
	select {
	case m.cancels <- cancelMsg{id: id, done: done}:
		<-done
	case <-m.quit:
		return Lease{}, ErrArenaShutdown
	}
	// A grant that raced the cancel is already in the buffer: nothing was
	// installed on it, so it goes straight back.
	select {
	case r := <-msg.reply:
		if r.err == nil {
			_ = m.Release(context.Background(), QuiescenceProof{ring: r.lease.Layout.RingID})
		}
	default:
	}
	return Lease{}, ctx.Err()
}

// Release returns a quiesced ring's range and serves queued requests.
func (m *ArenaManager) Release(ctx context.Context, proof QuiescenceProof) error {
	msg := releaseMsg{proof: proof, reply: make(chan error, 1)}
	select {
	case m.releases <- msg:
	case <-m.quit:
		return ErrArenaShutdown
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-msg.reply
}

// Stats snapshots the lease tables.
func (m *ArenaManager) Stats(ctx context.Context) (ArenaStats, error) {
	reply := make(chan ArenaStats, 1)
	select {
	case m.stats <- reply:
	case <-m.quit:
		return ArenaStats{}, ErrArenaShutdown
	case <-ctx.Done():
		return ArenaStats{}, ctx.Err()
	}
	return <-reply, nil
}

// Close shuts the manager down: queued and new leases fail with
// ErrArenaShutdown. It waits for the manager goroutine.
func (m *ArenaManager) Close() {
	m.closeOne.Do(func() { close(m.quit) })
	m.wg.Wait()
}
