// Package connlimit bounds the connections an HTTP server holds open, per
// client and in all, so that one careless or hostile client cannot take
// every connection (and file descriptor) a server has, nor lock others out.
//
// A client is who sent a connection's requests: the API key they carry, or
// without one the remote address. The key is only known once a request has
// arrived, after the TCP accept, so the Listener counts in three kinds of
// holders:
//
//   - pending: a connection that has sent no request yet, by address;
//   - keyed: a connection whose latest request carried an API key, by key;
//   - unkeyed: a connection whose latest request carried none, by address.
//
// Every holder may hold Config.PerClient connections. A pending connection
// over its address's bound is answered at once with an HTTP/1.1 429 and
// closed, unless an older connection of the address can make room (see
// below). A request that moves its connection into a full keyed or unkeyed
// holder makes room the same way, or is answered 429 and its connection
// closed. Behind a reverse proxy every client shares the proxy's address,
// and what separates them is their keys. (So an address without keys may
// hold PerClient connections that have sent requests and, for moments,
// PerClient more that have not: counting them together would let one
// client's busy connections refuse the proxy's next client before its key
// is read.)
//
// Config.Total bounds all connections. A new connection over it is admitted
// still when its address holds less than a fair share (Total divided among
// the holders) and a holder over the share has an idle connection: the
// oldest idle connection of the largest such holder is closed for it; else
// it may take the place of an idle connection of its own address. At the
// accept only the address is known, so once a request names the key, a key
// over its fair share while the Listener is full gives up its own idle
// connection in turn.
//
// Making room never closes a connection in the middle of a request: only
// one idle between requests (which HTTP clients expect a server to close),
// or one that has sent nothing for Config.Grace after its accept.
package connlimit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// refuseTimeout bounds the time spent on a refused connection: writing the
// answer and draining what the client sent before closing (a close with
// unread input resets the connection, and the client could lose the answer).
const refuseTimeout = 500 * time.Millisecond

// DefaultGrace is Config.Grace when unset: an HTTP client sends its
// request within a round trip of connecting; one silent for longer is
// holding a place, not about to use it.
const DefaultGrace = time.Second

// Config bounds a Listener's connections. Zero bounds nothing.
type Config struct {
	// PerClient bounds the connections of one client: an API key's, or an
	// address's without one (--max-conns-per-client). <= 0: no bound.
	PerClient int
	// Total bounds all connections (--max-conns). <= 0: no bound.
	Total int
	// Grace is how long a connection that has sent no request is spared
	// from being closed to make room (default DefaultGrace).
	Grace time.Duration
	// Refused, when set, is told of each refusal (for a log line). It is
	// called without the Listener's lock, perhaps on several goroutines at
	// once.
	Refused func(Refusal)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Refusal is one refused connection or request.
type Refusal struct {
	Client string // the address, or `key "NAME"`; never a secret
	Limit  int    // the bound it was over
	Total  bool   // the bound was Config.Total, not the per-client one
}

// Error says what was refused and what the client or operator can do.
func (r Refusal) Error() string {
	if r.Total {
		return fmt.Sprintf("the server holds its most open connections (%d) and none can be closed for this one; retry shortly, or raise --max-conns", r.Limit)
	}
	return fmt.Sprintf("too many open connections from %s (limit %d); close idle connections or raise --max-conns-per-client", r.Client, r.Limit)
}

// HTTPStatus is the status a refused request is answered with.
func (r Refusal) HTTPStatus() int { return http.StatusTooManyRequests }

// Client is who sent a request, as the API's authentication found it.
type Client struct {
	Key  string // the API key's identity (its digest); "" for none
	Name string // the key's name, for messages and logs
}

// holderKind is what a holder counts.
type holderKind uint8

const (
	pending holderKind = iota // connections with no request yet, by address
	keyed                     // by API key
	unkeyed                   // connections whose requests carry no key, by address
)

// holderID names a holder: the address for pending and unkeyed, the key's
// identity for keyed.
type holderID struct {
	kind holderKind
	addr netip.Addr
	key  string
}

type holder struct {
	name  string // the address, or `key "NAME"`
	conns map[*conn]struct{}
}

// Listener is a net.Listener that bounds its connections per client and in
// all. Give its ConnState and ConnContext to the http.Server that serves
// it, and call Claim for every request.
type Listener struct {
	net.Listener
	cfg Config

	mu      sync.Mutex
	holders map[holderID]*holder // guarded by mu
	total   int                  // connections counted, guarded by mu
}

// New wraps ln.
func New(ln net.Listener, cfg Config) *Listener {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Listener{Listener: ln, cfg: cfg, holders: map[holderID]*holder{}}
}

// conn is a counted connection.
type conn struct {
	net.Conn
	l    *Listener
	addr netip.Addr

	// Guarded by l.mu.
	holder  holderID
	state   http.ConnState
	since   time.Time // when accepted, or when it last became idle
	dropped bool      // no longer counted: closed, or chosen to be closed
}

// Accept returns the next connection within the bounds, closing an idle
// one to make room when the bounds allow; the others are answered and
// closed in the background.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr, ok := remoteIP(nc)
		if !ok || (l.cfg.PerClient <= 0 && l.cfg.Total <= 0) {
			return nc, nil
		}
		c := &conn{Conn: nc, l: l, addr: addr, state: http.StateNew, since: l.cfg.Now()}
		victim, refusal := l.admit(c)
		if victim != nil {
			victim.Conn.Close()
		}
		if refusal == nil {
			return c, nil
		}
		go l.refuse(nc, *refusal)
	}
}

// admit counts c as pending, or says why not. The victim, when not nil,
// was uncounted to make room and is to be closed.
func (l *Listener) admit(c *conn) (victim *conn, refused *Refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.cfg.Now()
	id := holderID{kind: pending, addr: c.addr}
	if l.cfg.PerClient > 0 && l.count(id) >= l.cfg.PerClient {
		if victim = l.oldestIdle(l.holders[id], now, nil); victim == nil {
			return nil, &Refusal{Client: c.addr.String(), Limit: l.cfg.PerClient}
		}
		l.drop(victim)
	}
	// A victim of the address's own made room in the total too.
	if victim == nil && l.cfg.Total > 0 && l.total >= l.cfg.Total {
		if victim = l.donor(id, now); victim == nil {
			return nil, &Refusal{Client: c.addr.String(), Limit: l.cfg.Total, Total: true}
		}
		l.drop(victim)
	}
	l.add(c, id, c.addr.String())
	return victim, nil
}

// donor picks the connection to close for a new one of holder id while
// the Listener is full: the oldest idle connection of the largest holder
// over its fair share, when id holds less than the share; else one of id's
// own, which shifts nothing between clients. Nil when there is none.
func (l *Listener) donor(id holderID, now time.Time) *conn {
	holders := len(l.holders)
	if _, ok := l.holders[id]; !ok {
		holders++
	}
	share := max(1, l.cfg.Total/holders)
	if l.count(id) < share {
		var over []*holder
		for _, h := range l.holders {
			if len(h.conns) > share {
				over = append(over, h)
			}
		}
		slices.SortFunc(over, func(a, b *holder) int { return cmp.Compare(len(b.conns), len(a.conns)) })
		for _, h := range over {
			if v := l.oldestIdle(h, now, nil); v != nil {
				return v
			}
		}
	}
	return l.oldestIdle(l.holders[id], now, nil)
}

// oldestIdle is h's connection idle longest, except skip, that may be
// closed to make room: one idle between requests, or one silent for the
// grace since its accept. Nil when none.
func (l *Listener) oldestIdle(h *holder, now time.Time, skip *conn) *conn {
	if h == nil {
		return nil
	}
	var best *conn
	for c := range h.conns {
		if c == skip {
			continue
		}
		idle := c.state == http.StateIdle || (c.state == http.StateNew && now.Sub(c.since) >= l.cfg.Grace)
		if idle && (best == nil || c.since.Before(best.since)) {
			best = c
		}
	}
	return best
}

func (l *Listener) count(id holderID) int {
	if h := l.holders[id]; h != nil {
		return len(h.conns)
	}
	return 0
}

// add counts c under holder id.
func (l *Listener) add(c *conn, id holderID, name string) {
	h := l.holders[id]
	if h == nil {
		h = &holder{name: name, conns: map[*conn]struct{}{}}
		l.holders[id] = h
	}
	h.conns[c] = struct{}{}
	c.holder = id
	l.total++
}

// remove uncounts c from its holder.
func (l *Listener) remove(c *conn) {
	h := l.holders[c.holder]
	delete(h.conns, c)
	if len(h.conns) == 0 {
		delete(l.holders, c.holder)
	}
	l.total--
}

// drop uncounts c for good: it is closed or about to be.
func (l *Listener) drop(c *conn) {
	if !c.dropped {
		l.remove(c)
		c.dropped = true
	}
}

// Claim counts the connection that carries the request of ctx under the
// client that sent it (a request without a key: its address), closing an
// idle connection of the client's to make room when it is over its bound.
// A Refusal means the client holds its bound with none idle: answer the
// request with its HTTPStatus and close the connection (the connection is
// uncounted already). Requests on connections this Listener did not
// accept are not counted.
func (l *Listener) Claim(ctx context.Context, cl Client) error {
	c, _ := ctx.Value(connKey{}).(*conn)
	if c == nil || c.l != l {
		return nil
	}
	id, name := holderID{kind: unkeyed, addr: c.addr}, c.addr.String()
	if cl.Key != "" {
		id, name = holderID{kind: keyed, key: cl.Key}, fmt.Sprintf("key %q", cl.Name)
	}
	victim, refused := l.claim(c, id, name)
	if victim != nil {
		victim.Conn.Close()
	}
	if refused != nil {
		if l.cfg.Refused != nil {
			l.cfg.Refused(*refused)
		}
		return *refused
	}
	return nil
}

func (l *Listener) claim(c *conn, id holderID, name string) (victim *conn, refused *Refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.dropped || c.holder == id {
		return nil, nil
	}
	l.remove(c)
	l.add(c, id, name)
	now := l.cfg.Now()
	if l.cfg.PerClient > 0 && l.count(id) > l.cfg.PerClient {
		if victim = l.oldestIdle(l.holders[id], now, c); victim == nil {
			l.drop(c)
			return nil, &Refusal{Client: name, Limit: l.cfg.PerClient}
		}
		l.drop(victim)
		return victim, nil
	}
	// The connection was admitted by its address, not knowing its client:
	// while the Listener is full, a client over its fair share recycles
	// its own idle connection rather than keep the place it took.
	if l.cfg.Total > 0 && l.total >= l.cfg.Total && l.count(id) > max(1, l.cfg.Total/len(l.holders)) {
		if victim = l.oldestIdle(l.holders[id], now, c); victim != nil {
			l.drop(victim)
		}
	}
	return victim, nil
}

// ConnState is the http.Server's ConnState hook: it tells the Listener
// which connections are idle, and which are gone.
func (l *Listener) ConnState(nc net.Conn, s http.ConnState) {
	c, ok := nc.(*conn)
	if !ok || c.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateClosed:
		l.drop(c)
	case http.StateIdle:
		c.state, c.since = s, l.cfg.Now()
	default:
		c.state = s
	}
}

type connKey struct{}

// ConnContext is the http.Server's ConnContext hook: it lets Claim find a
// request's connection.
func (l *Listener) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c, ok := nc.(*conn); ok && c.l == l {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// Stats is what the Listener counts now.
type Stats struct {
	Total int
	Idle  int // of Total, those idle between requests
	// Clients holds each client's connections: an address (pending and
	// unkeyed together) or `key "NAME"`.
	Clients map[string]int
}

// Stats returns the counts now.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Stats{Total: l.total, Clients: map[string]int{}}
	for _, h := range l.holders {
		s.Clients[h.name] += len(h.conns)
		for c := range h.conns {
			if c.state == http.StateIdle {
				s.Idle++
			}
		}
	}
	return s
}

// refuse answers c with a 429 and closes it, in at most refuseTimeout.
func (l *Listener) refuse(c net.Conn, r Refusal) {
	defer c.Close()
	if l.cfg.Refused != nil {
		l.cfg.Refused(r)
	}
	c.SetDeadline(time.Now().Add(refuseTimeout))
	if _, err := c.Write(refusalResponse(r)); err != nil {
		return
	}
	// Half-close, then read what the client sent until it closes too: a
	// close with its request unread would reset the connection, and the
	// client could lose the answer before reading it.
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// refusalResponse is the whole HTTP/1.1 response that refuses a
// connection: a 429 with an error document in OpenAI's shape, which every
// client of the API can at least print.
func refusalResponse(r Refusal) []byte {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": r.Error(), "type": "rate_limit_error", "param": nil, "code": "too_many_connections",
	}})
	body = append(body, '\n')
	head := fmt.Sprintf("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	return append([]byte(head), body...)
}

// Close uncounts the connection and closes it.
func (c *conn) Close() error {
	c.l.mu.Lock()
	c.l.drop(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite keeps the half-close of the connection underneath visible:
// net/http sends its last answer with it before closing, so the client
// reads the answer instead of a reset.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// remoteIP is the address a connection came from, when it has one (a TCP
// peer; a Unix socket has none and is not limited).
func remoteIP(c net.Conn) (netip.Addr, bool) {
	a, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	return a.AddrPort().Addr().Unmap(), true
}
