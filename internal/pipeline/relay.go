package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
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

	mu    sync.Mutex
	slots map[edgeKey]chan net.Conn // receiving ends waiting for a sender
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
	if dial == nil {
		in, err := r.take(ctx, k)
		if err != nil {
			r.log().Warn("link's receiving end never connected", "instance", h.Instance, "link", k.link, "err", err)
			c.Close()
			return
		}
		if !ready(in) || !ready(c) {
			in.Close()
			c.Close()
			return
		}
		r.log().Debug("link relayed on this node", "instance", h.Instance, "link", k.link)
		splice(c, in, in)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, r.wait())
	defer cancel()
	s, err := dialRemote(wctx, dial, remoteHeader{h.Instance, k.link})
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
	r.log().Debug("link relayed to another node", "instance", h.Instance, "link", k.link)
	splice(c, s, s)
}

// dialRemote opens the stream, says which link it carries and waits for
// the far relay's EdgeReady.
func dialRemote(ctx context.Context, dial func(ctx context.Context) (io.ReadWriteCloser, error), h remoteHeader) (io.ReadWriteCloser, error) {
	s, err := dial(ctx)
	if err != nil {
		return nil, err
	}
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
	splice(s, in, in)
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

// splice copies src to dst until either ends, watching quiet (dst's side,
// which sends nothing more) for its end; then it closes both.
func splice(src io.ReadCloser, dst io.WriteCloser, quiet io.Reader) {
	var once sync.Once
	end := func() {
		once.Do(func() {
			src.Close()
			dst.Close()
		})
	}
	go func() {
		io.Copy(io.Discard, quiet)
		end()
	}()
	io.Copy(dst, src)
	end()
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
