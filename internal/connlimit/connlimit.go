// Package connlimit bounds how many connections one client address may hold
// open on a listener, so one careless or hostile client cannot take every
// connection (and file descriptor) a server has. A connection over the
// bound is answered at once with an HTTP/1.1 429 and closed; the server
// behind the listener never sees it.
package connlimit

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// refuseTimeout bounds the time spent on a refused connection: writing the
// answer and draining what the client sent before closing (a close with
// unread input resets the connection, and the client could lose the answer).
const refuseTimeout = 500 * time.Millisecond

// Listener is a net.Listener that admits at most Limit open connections
// per remote IP address.
type Listener struct {
	net.Listener
	limit   int
	refused func(addr netip.Addr) // called for each refused connection; may be nil

	mu   sync.Mutex
	open map[netip.Addr]int
}

// New wraps ln. limit <= 0 admits every connection. refused, when not nil,
// is told of each refused connection (for a log line), on its own
// goroutine.
func New(ln net.Listener, limit int, refused func(addr netip.Addr)) *Listener {
	return &Listener{Listener: ln, limit: limit, refused: refused, open: map[netip.Addr]int{}}
}

// Accept returns the next connection whose address is within the limit;
// those over it are answered and closed in the background.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr, ok := remoteIP(c)
		if !ok || l.limit <= 0 {
			return c, nil
		}
		if l.admit(addr) {
			return &conn{Conn: c, release: sync.OnceFunc(func() { l.release(addr) })}, nil
		}
		go l.refuse(c, addr)
	}
}

// Open returns how many connections addr holds open.
func (l *Listener) Open(addr netip.Addr) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[addr]
}

func (l *Listener) admit(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[addr] >= l.limit {
		return false
	}
	l.open[addr]++
	return true
}

func (l *Listener) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[addr]--; l.open[addr] <= 0 {
		delete(l.open, addr)
	}
}

// refuse answers c with a 429 and closes it, in at most refuseTimeout.
func (l *Listener) refuse(c net.Conn, addr netip.Addr) {
	defer c.Close()
	if l.refused != nil {
		l.refused(addr)
	}
	c.SetDeadline(time.Now().Add(refuseTimeout))
	if _, err := c.Write(Refusal(addr, l.limit)); err != nil {
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

// Refusal is the whole HTTP/1.1 response that refuses a connection from
// addr over limit: a 429 with an error document in OpenAI's shape, which
// every client of the API can at least print.
func Refusal(addr netip.Addr, limit int) []byte {
	msg := fmt.Sprintf("too many open connections from %s (limit %d); close idle connections or raise --max-conns-per-client", addr, limit)
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "rate_limit_error", "param": nil, "code": "too_many_connections",
	}})
	body = append(body, '\n')
	head := fmt.Sprintf("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	return append([]byte(head), body...)
}

// conn gives its address's place back when closed.
type conn struct {
	net.Conn
	release func()
}

func (c *conn) Close() error {
	c.release()
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
