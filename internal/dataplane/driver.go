package dataplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// DriverEventKind is one of the coarse edge lifecycle events of spec §24.
type DriverEventKind uint8

const (
	EdgeReady DriverEventKind = iota + 1
	StreamClosed
	StreamFault
	PumpStoppedEvent
)

// DriverEvent reports an edge lifecycle change. There are no per-object or
// per-range events.
type DriverEvent struct {
	Kind DriverEventKind
	Edge EdgeID
	Ring RingID
	Err  error // *StreamFaultError for StreamFault
}

// DriverConfig configures a Driver.
type DriverConfig struct {
	Identity Identity
	Logger   *slog.Logger
	Dial     Dialer
	// OnEvent receives lifecycle events from pump goroutines; it must not
	// block. May be nil.
	OnEvent func(DriverEvent)
}

// SendSpec establishes the sending end of an edge: the send pump drains
// the egress ring (as its consumer) into one uni-stream to Peer.
type SendSpec struct {
	Edge EdgeID
	Peer NodeID
	Ring *Consumer
}

// RecvSpec establishes the receiving end of an edge: the recv pump fills
// the ingress ring (as its producer) from the stream that names Edge.
type RecvSpec struct {
	Edge EdgeID
	Ring *Producer
}

// Driver is the node's boundary between rings and the edge transport. One
// goroutine owns its tables: receive specs, streams waiting for a spec, and
// running pumps. Pumps are byte-blind copies.
type Driver struct {
	cfg   DriverConfig
	obs   observer
	life  context.Context // the driver's lifetime; cancelled by Close
	stop  context.CancelFunc
	wg    sync.WaitGroup
	calls chan func(*driverState)

	// The connection cache is shared by pump goroutines dialling on demand.
	connMu sync.Mutex
	conns  map[NodeID]*connEntry // guarded by connMu
}

type connEntry struct {
	ready chan struct{} // closed when conn/err are set
	conn  PeerConn
	err   error
}

// driverState is owned by the Driver goroutine.
type driverState struct {
	recvSpecs map[EdgeID]RecvSpec
	pending   map[EdgeID]RecvStream
	pumps     map[EdgeID]*pump
}

type pump struct {
	ring   RingID
	cancel context.CancelFunc
	done   chan struct{}
}

// NewDriver starts a driver; Close stops it and every pump.
func NewDriver(cfg DriverConfig) *Driver {
	life, stop := context.WithCancel(context.Background())
	d := &Driver{
		cfg:   cfg,
		obs:   newObserver(cfg.Logger, cfg.Identity),
		life:  life,
		stop:  stop,
		calls: make(chan func(*driverState)),
		conns: make(map[NodeID]*connEntry),
	}
	st := &driverState{
		recvSpecs: make(map[EdgeID]RecvSpec),
		pending:   make(map[EdgeID]RecvStream),
		pumps:     make(map[EdgeID]*pump),
	}
	d.wg.Go(func() { d.run(st) })
	return d
}

func (d *Driver) run(st *driverState) {
	for {
		select {
		case f := <-d.calls:
			f(st)
		case <-d.life.Done():
			for _, s := range st.pending {
				s.Abort()
			}
			for _, p := range st.pumps {
				p.cancel()
			}
			return
		}
	}
}

// do runs f on the owner goroutine and waits for it.
func (d *Driver) do(ctx context.Context, f func(*driverState)) error {
	done := make(chan struct{})
	select {
	case d.calls <- func(st *driverState) { f(st); close(done) }:
	case <-d.life.Done():
		return ErrDriverClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	<-done
	return nil
}

// Close stops every pump and demux loop and waits for them.
func (d *Driver) Close() {
	d.stop()
	d.wg.Wait()
}

func (d *Driver) event(ev DriverEvent) {
	attrs := []slog.Attr{edgeAttr(ev.Edge)}
	if ev.Ring != 0 {
		attrs = append(attrs, ringAttr(ev.Ring))
	}
	level := slog.LevelInfo
	var name string
	switch ev.Kind {
	case EdgeReady:
		name = EventEdgeReady
	case StreamClosed:
		name = EventStreamClosed
	case StreamFault:
		name, level = EventStreamFault, slog.LevelWarn
		attrs = append(attrs, componentAttr("driver"), errAttr(ev.Err))
		var sf *StreamFaultError
		if errors.As(ev.Err, &sf) {
			attrs = append(attrs, reasonAttr(sf.Reason.String()))
		}
	case PumpStoppedEvent:
		name = EventPumpStopped
	}
	d.obs.emit(level, name, attrs...)
	if d.cfg.OnEvent != nil {
		d.cfg.OnEvent(ev)
	}
}

// Serve demultiplexes the uni-streams a peer opens on conn until the driver
// closes: each stream's edge-id preamble pairs it with its receive spec.
func (d *Driver) Serve(conn PeerConn) {
	d.wg.Go(func() {
		for {
			s, err := conn.AcceptUniStream(d.life)
			if err != nil {
				return // connection or driver closed
			}
			d.wg.Go(func() { d.demux(s) })
		}
	})
}

func (d *Driver) demux(s RecvStream) {
	stop := context.AfterFunc(d.life, s.Abort)
	edge, err := readPreamble(s)
	stop()
	if err != nil {
		s.Abort()
		if d.life.Err() == nil {
			d.event(DriverEvent{Kind: StreamFault, Err: &StreamFaultError{Reason: StreamPreambleInvalid, Err: err}})
		}
		return
	}
	err = d.do(d.life, func(st *driverState) {
		if _, dup := st.pending[edge]; dup || st.pumps[edge] != nil {
			s.Abort()
			d.event(DriverEvent{Kind: StreamFault, Edge: edge, Err: &StreamFaultError{Edge: edge, Reason: StreamDuplicate, Err: errors.New("second stream for edge")}})
			return
		}
		spec, ok := st.recvSpecs[edge]
		if !ok {
			// Nobody reads it yet, so QUIC flow control stalls the sender.
			st.pending[edge] = s
			return
		}
		delete(st.recvSpecs, edge)
		d.startRecv(st, spec, s)
	})
	if err != nil {
		s.Abort()
	}
}

// EstablishRecv installs the receiving end of an edge. If its stream already
// arrived the pump starts now; otherwise it starts when the stream arrives.
func (d *Driver) EstablishRecv(ctx context.Context, spec RecvSpec) error {
	var err error
	if cerr := d.do(ctx, func(st *driverState) {
		if _, ok := st.recvSpecs[spec.Edge]; ok || st.pumps[spec.Edge] != nil {
			err = fmt.Errorf("%w: %d", ErrEdgeExists, spec.Edge)
			return
		}
		d.obs.emit(slog.LevelInfo, EventEdgeProvision, edgeAttr(spec.Edge), ringAttr(spec.Ring.ID()), slog.String("direction", "ingress"))
		if s, ok := st.pending[spec.Edge]; ok {
			delete(st.pending, spec.Edge)
			d.startRecv(st, spec, s)
			return
		}
		st.recvSpecs[spec.Edge] = spec
	}); cerr != nil {
		return cerr
	}
	return err
}

// EstablishSend installs the sending end of an edge. The stream opens when
// the first bytes are committed to the egress ring.
func (d *Driver) EstablishSend(ctx context.Context, spec SendSpec) error {
	var err error
	if cerr := d.do(ctx, func(st *driverState) {
		if st.pumps[spec.Edge] != nil {
			err = fmt.Errorf("%w: %d", ErrEdgeExists, spec.Edge)
			return
		}
		d.obs.emit(slog.LevelInfo, EventEdgeProvision, edgeAttr(spec.Edge), ringAttr(spec.Ring.ID()), slog.String("direction", "egress"))
		p := d.newPump(st, spec.Edge, spec.Ring.ID())
		pctx, cancel := context.WithCancel(d.life)
		p.cancel = cancel
		d.event(DriverEvent{Kind: EdgeReady, Edge: spec.Edge, Ring: spec.Ring.ID()})
		d.wg.Go(func() {
			defer d.pumpExit(p, spec.Edge)
			d.sendPump(pctx, spec)
		})
	}); cerr != nil {
		return cerr
	}
	return err
}

func (d *Driver) newPump(st *driverState, edge EdgeID, ring RingID) *pump {
	p := &pump{ring: ring, done: make(chan struct{})}
	st.pumps[edge] = p
	return p
}

func (d *Driver) pumpExit(p *pump, edge EdgeID) {
	p.cancel()
	close(p.done)
	d.event(DriverEvent{Kind: PumpStoppedEvent, Edge: edge, Ring: p.ring})
}

func (d *Driver) startRecv(st *driverState, spec RecvSpec, s RecvStream) {
	p := d.newPump(st, spec.Edge, spec.Ring.ID())
	pctx, cancel := context.WithCancel(d.life)
	p.cancel = cancel
	d.event(DriverEvent{Kind: EdgeReady, Edge: spec.Edge, Ring: spec.Ring.ID()})
	d.wg.Go(func() {
		defer d.pumpExit(p, spec.Edge)
		d.recvPump(pctx, spec, s)
	})
}

// DriverStats counts the driver's tables.
type DriverStats struct {
	RecvSpecs      int // receive ends waiting for their stream
	PendingStreams int // streams waiting for their receive end
	Pumps          int
}

// Stats snapshots the driver's tables.
func (d *Driver) Stats(ctx context.Context) (DriverStats, error) {
	var s DriverStats
	err := d.do(ctx, func(st *driverState) {
		s = DriverStats{RecvSpecs: len(st.recvSpecs), PendingStreams: len(st.pending), Pumps: len(st.pumps)}
	})
	return s, err
}

// StopEdge stops the edge's pump (or drops its unpaired spec) and returns
// the driver's half of the quiescence proof once no pump touches the ring.
func (d *Driver) StopEdge(ctx context.Context, edge EdgeID) (PumpStopped, error) {
	var (
		p    *pump
		ring RingID
		err  error
	)
	if cerr := d.do(ctx, func(st *driverState) {
		if spec, ok := st.recvSpecs[edge]; ok {
			delete(st.recvSpecs, edge)
			ring = spec.Ring.ID()
			return
		}
		if s, ok := st.pending[edge]; ok {
			delete(st.pending, edge)
			s.Abort()
		}
		if p = st.pumps[edge]; p == nil {
			err = fmt.Errorf("%w: %d", ErrUnknownEdge, edge)
			return
		}
		delete(st.pumps, edge)
		ring = p.ring
		p.cancel()
	}); cerr != nil {
		return PumpStopped{}, cerr
	}
	if err != nil {
		return PumpStopped{}, err
	}
	if p != nil {
		select {
		case <-p.done:
		case <-ctx.Done():
			return PumpStopped{}, ctx.Err()
		}
	}
	return PumpStopped{Edge: edge, Ring: ring}, nil
}

// recvPump copies stream bytes into free ring spans and commits them. It
// does not look at object boundaries; the worker's parser classifies EOF.
func (d *Driver) recvPump(ctx context.Context, spec RecvSpec, s RecvStream) {
	stop := context.AfterFunc(ctx, s.Abort)
	defer stop()
	ring := spec.Ring
	fault := func(r StreamFaultReason, err error) {
		_ = ring.Fault()
		d.event(DriverEvent{Kind: StreamFault, Edge: spec.Edge, Ring: ring.ID(), Err: &StreamFaultError{Edge: spec.Edge, Reason: r, Err: err}})
	}
	for {
		span, err := ring.Reserve()
		if err != nil {
			if ctx.Err() == nil {
				s.Abort()
				fault(StreamRingFault, err)
			}
			return
		}
		if len(span) == 0 {
			if err := ring.WaitWritable(ctx); err != nil {
				if ctx.Err() == nil {
					s.Abort()
					fault(StreamRingFault, err)
				}
				return
			}
			continue
		}
		n, rerr := s.Read(span)
		if n > 0 {
			if err := ring.Commit(n); err != nil {
				fault(StreamRingFault, err)
				return
			}
		}
		switch {
		case rerr == io.EOF:
			_ = ring.Close()
			d.event(DriverEvent{Kind: StreamClosed, Edge: spec.Edge, Ring: ring.ID()})
			return
		case rerr != nil:
			if ctx.Err() == nil {
				fault(StreamReadFailed, rerr)
			}
			return
		}
	}
}

// sendPump opens the edge stream on the first committed bytes, writes the
// preamble once, then copies committed spans and releases them only after
// the transport accepted them.
func (d *Driver) sendPump(ctx context.Context, spec SendSpec) {
	ring := spec.Ring
	fault := func(r StreamFaultReason, err error) {
		if ctx.Err() != nil {
			return // stopped, not faulted
		}
		d.event(DriverEvent{Kind: StreamFault, Edge: spec.Edge, Ring: ring.ID(), Err: &StreamFaultError{Edge: spec.Edge, Reason: r, Err: err}})
	}
	if err := ring.WaitReadable(ctx); err != nil {
		fault(StreamRingFault, err)
		return
	}
	conn, err := d.conn(ctx, spec.Peer)
	if err != nil {
		fault(ConnectFailed, err)
		return
	}
	s, err := conn.OpenUniStream(ctx)
	if err != nil {
		fault(StreamOpenFailed, err)
		return
	}
	stop := context.AfterFunc(ctx, s.Abort)
	defer stop()
	var pre [PreambleLen]byte
	putPreamble(pre[:], spec.Edge)
	if _, err := s.Write(pre[:]); err != nil {
		fault(StreamWriteFailed, err)
		return
	}
	for {
		span, err := ring.Peek()
		if err == io.EOF {
			if err := s.Close(); err != nil {
				fault(StreamWriteFailed, err)
				return
			}
			d.event(DriverEvent{Kind: StreamClosed, Edge: spec.Edge, Ring: ring.ID()})
			return
		}
		if err != nil {
			s.Abort()
			fault(StreamRingFault, err)
			return
		}
		if len(span) == 0 {
			if err := ring.WaitReadable(ctx); err != nil {
				fault(StreamRingFault, err)
				return
			}
			continue
		}
		if _, err := s.Write(span); err != nil {
			fault(StreamWriteFailed, err)
			return
		}
		if err := ring.Release(len(span)); err != nil {
			s.Abort()
			fault(StreamRingFault, err)
			return
		}
	}
}

// conn returns the cached connection to peer, dialling once; every edge to
// the same peer shares it.
func (d *Driver) conn(ctx context.Context, peer NodeID) (PeerConn, error) {
	d.connMu.Lock()
	e, ok := d.conns[peer]
	if !ok {
		e = &connEntry{ready: make(chan struct{})}
		d.conns[peer] = e
	}
	d.connMu.Unlock()
	if !ok {
		if d.cfg.Dial == nil {
			e.err = errors.New("dataplane: driver has no dialer")
		} else {
			e.conn, e.err = d.cfg.Dial(ctx, peer)
		}
		if e.err != nil {
			d.connMu.Lock()
			delete(d.conns, peer) // a later edge may retry
			d.connMu.Unlock()
		}
		close(e.ready)
	}
	select {
	case <-e.ready:
		return e.conn, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
