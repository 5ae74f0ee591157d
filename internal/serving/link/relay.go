package link

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"
)

// Relay is a node's side of the edge socket: it pairs the sending end of
// each link (rank k's "out" connection) with its receiving end (rank
// k+1's "in" connection), on this node directly or through a stream to the
// node of the receiving rank, and copies the frames across. It answers
// EdgeReady on a runner's connection once the link is through, and closes
// both ends when either goes: the pipeline is fail-stop.
type Relay struct {
	// Route says how link of an instance reaches its receiving end: a nil
	// dial means on this node; otherwise dial opens a stream to the node
	// that holds it (whose Relay.Accept takes it).
	Route func(instance string, link, ranks int) (dial func(ctx context.Context) (io.ReadWriteCloser, error), err error)
	// Wait bounds how long one end waits for the other; 0 means two
	// minutes.
	Wait   time.Duration
	Logger *slog.Logger

	mu     sync.Mutex
	slots  map[edgeKey]chan net.Conn // receiving ends waiting for a sender
	meters map[edgeKey]*linkMeter    // the links this node sends on
}

type edgeKey struct {
	instance string
	link     int
}

// remoteHeader opens a stream between two nodes' relays.
type remoteHeader struct {
	Instance string `json:"instance"`
	Link     int    `json:"link"`
}

func (r *Relay) wait() time.Duration {
	if r.Wait > 0 {
		return r.Wait
	}
	return 2 * time.Minute
}

func (r *Relay) log() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

func (r *Relay) slot(k edgeKey) chan net.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.slots == nil {
		r.slots = map[edgeKey]chan net.Conn{}
	}
	ch, ok := r.slots[k]
	if !ok {
		ch = make(chan net.Conn, 1)
		r.slots[k] = ch
	}
	return ch
}

// Serve accepts runners' edge connections on ln until it is closed.
func (r *Relay) Serve(ctx context.Context, ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go r.handle(ctx, c)
	}
}

func (r *Relay) handle(ctx context.Context, c net.Conn) {
	h, err := ReadEdgeHello(c, 10*time.Second)
	if err != nil {
		r.log().Warn("edge connection refused", "err", err)
		c.Close()
		return
	}
	k := edgeKey{h.Instance, h.Link()}
	if h.Dir == EdgeIn {
		r.deposit(k, c)
		return
	}
	dial, err := r.Route(h.Instance, k.link, h.Ranks)
	if err != nil {
		r.log().Warn("edge has no route", "instance", h.Instance, "link", k.link, "err", err)
		c.Close()
		return
	}
	m := r.meter(k, dial != nil)
	defer m.set(LinkClosed, "")
	if dial == nil {
		in, err := r.take(ctx, k)
		if err != nil {
			m.set(LinkWaiting, "the receiving rank's runner did not link: "+err.Error())
			r.log().Warn("link's receiving end never connected", "instance", h.Instance, "link", k.link, "err", err)
			c.Close()
			return
		}
		if !ready(in) || !ready(c) {
			in.Close()
			c.Close()
			return
		}
		m.set(LinkConnected, "")
		r.log().Debug("link relayed on this node", "instance", h.Instance, "link", k.link)
		spliceMetered(c, in, in, nil, func() time.Time { return m.begin(false) }, func(start time.Time, size int) error {
			m.sent(size)
			m.mu.Lock()
			m.sample(time.Since(start))
			m.mu.Unlock()
			return nil
		})
		return
	}
	s, err := r.dialRetrying(ctx, dial, remoteHeader{h.Instance, k.link}, m)
	if err != nil {
		r.log().Warn("link to the next rank's node failed", "instance", h.Instance, "link", k.link, "err", err)
		c.Close()
		return
	}
	if !ready(c) {
		s.Close()
		c.Close()
		return
	}
	m.set(LinkConnected, "")
	r.log().Debug("link relayed to another node", "instance", h.Instance, "link", k.link)
	spliceMetered(c, s, s, func(b byte) {
		if b == ackByte {
			m.acked(time.Now())
		}
	}, func() time.Time { return m.begin(true) }, func(_ time.Time, size int) error {
		m.sent(size)
		return nil
	})
}

// dialRetrying dials the receiving rank's node until the link is through
// or the relay's wait ends: the far node may not be up yet, or its runner
// still loading. Each failure is the link's error in its report.
func (r *Relay) dialRetrying(ctx context.Context, dial func(ctx context.Context) (io.ReadWriteCloser, error), h remoteHeader, m *linkMeter) (io.ReadWriteCloser, error) {
	wctx, cancel := context.WithTimeout(ctx, r.wait())
	defer cancel()
	connecting := "connecting to the receiving rank's node"
	for {
		m.set(LinkWaiting, connecting)
		s, err := dialRemote(wctx, dial, h, func() { m.set(LinkWaiting, "the receiving rank's node has not linked its runner yet") })
		if err == nil {
			return s, nil
		}
		m.set(LinkWaiting, err.Error())
		connecting = "connecting to the receiving rank's node again; the last attempt: " + err.Error()
		select {
		case <-wctx.Done():
			return nil, err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// meter returns the meter of link k, sent from this node, new.
func (r *Relay) meter(k edgeKey, remote bool) *linkMeter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.meters == nil {
		r.meters = map[edgeKey]*linkMeter{}
	}
	m := &linkMeter{rep: LinkReport{Instance: k.instance, Link: k.link, Remote: remote, State: LinkWaiting}}
	r.meters[k] = m
	return m
}

// Links reports the links this node's relay sends on, by instance and link.
func (r *Relay) Links() []LinkReport {
	r.mu.Lock()
	ms := make([]*linkMeter, 0, len(r.meters))
	for _, m := range r.meters {
		ms = append(ms, m)
	}
	r.mu.Unlock()
	out := make([]LinkReport, len(ms))
	for i, m := range ms {
		out[i] = m.report()
	}
	slices.SortFunc(out, func(a, b LinkReport) int {
		return cmp.Or(cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Link, b.Link))
	})
	return out
}

// Forget drops the reports of the closed links of instances keep rejects
// (a link still open is reported until it closes, whatever the caller's
// view of the instances).
func (r *Relay) Forget(keep func(instance string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, m := range r.meters {
		if !keep(k.instance) && m.report().State == LinkClosed {
			delete(r.meters, k)
		}
	}
}

// dialRemote opens the stream, says which link it carries and waits for
// the far relay's EdgeReady.
func dialRemote(ctx context.Context, dial func(ctx context.Context) (io.ReadWriteCloser, error), h remoteHeader, dialed func()) (io.ReadWriteCloser, error) {
	s, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	dialed()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	b, _ := json.Marshal(h)
	if _, err := s.Write(append(b, '\n')); err != nil {
		s.Close()
		return nil, err
	}
	var ack [1]byte
	if _, err := io.ReadFull(s, ack[:]); err != nil || ack[0] != EdgeReady {
		s.Close()
		return nil, fmt.Errorf("the far node did not connect the link: %v", err)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return s, nil
}

// Accept takes a stream another node's relay opened (AcceptRemote's
// header first) and joins it to the link's receiving end on this node.
func (r *Relay) Accept(ctx context.Context, s io.ReadWriteCloser) {
	var h remoteHeader
	line, err := readLine(s, maxHello)
	if err == nil {
		err = json.Unmarshal(line, &h)
	}
	if err != nil || h.Instance == "" || h.Link < 0 {
		r.log().Warn("edge stream refused", "err", err)
		s.Close()
		return
	}
	k := edgeKey{h.Instance, h.Link}
	in, err := r.take(ctx, k)
	if err != nil {
		r.log().Warn("link's receiving end never connected", "instance", h.Instance, "link", h.Link, "err", err)
		s.Close()
		return
	}
	if !ready(in) {
		in.Close()
		s.Close()
		return
	}
	if _, err := s.Write([]byte{EdgeReady}); err != nil {
		in.Close()
		s.Close()
		return
	}
	// Each object written to the runner is acked on the stream: the
	// sending relay times the hop by it (relaymeter.go).
	ack := []byte{ackByte}
	spliceMetered(s, in, in, nil, time.Now, func(time.Time, int) error {
		_, err := s.Write(ack)
		return err
	})
}

// deposit leaves a receiving end for its sender, replacing a stale one.
func (r *Relay) deposit(k edgeKey, c net.Conn) {
	ch := r.slot(k)
	for {
		select {
		case ch <- c:
			return
		default:
		}
		select {
		case old := <-ch:
			old.Close()
		default:
		}
	}
}

// take waits for the receiving end of k.
func (r *Relay) take(ctx context.Context, k edgeKey) (net.Conn, error) {
	t := time.NewTimer(r.wait())
	defer t.Stop()
	select {
	case c := <-r.slot(k):
		return c, nil
	case <-t.C:
		return nil, errors.New("timed out")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func ready(c net.Conn) bool {
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	defer c.SetWriteDeadline(time.Time{})
	_, err := c.Write([]byte{EdgeReady})
	return err == nil
}

func readLine(r io.Reader, limit int) ([]byte, error) {
	var line []byte
	var b [1]byte
	for len(line) <= limit {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, err
		}
		if b[0] == '\n' {
			return line, nil
		}
		line = append(line, b[0])
	}
	return nil, errors.New("line too long")
}
