package transport

import (
	"context"
	"crypto/ed25519"
	"net"
	"sync"
	"sync/atomic"

	"github.com/quic-go/quic-go"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Conn is an authenticated QUIC connection to one peer on one ALPN. It is
// safe for concurrent use.
type Conn struct {
	// immutable after authenticate
	qc      *quic.Conn
	peer    ids.NodeID
	key     ed25519.PublicKey
	alpn    string
	inbound bool
	pongs   chan uint64 // health pongs, written by the datagram loop
	// answered counts the health pings answered within their budget, so a
	// test can tell a connection whose pings work from one not yet pinged.
	answered atomic.Uint64

	mu       sync.Mutex
	localErr error // guarded by mu: why we closed the connection, if we did
}

func newConn(qc *quic.Conn, peer ids.NodeID, key ed25519.PublicKey, inbound bool) *Conn {
	return &Conn{
		qc:      qc,
		peer:    peer,
		key:     key,
		alpn:    qc.ConnectionState().TLS.NegotiatedProtocol,
		inbound: inbound,
		pongs:   make(chan uint64, 4),
	}
}

// Peer returns the authenticated node id of the other side.
func (c *Conn) Peer() ids.NodeID { return c.peer }

// PublicKey returns the other side's certificate key (already checked by
// Config.VerifyPeer).
func (c *Conn) PublicKey() ed25519.PublicKey { return c.key }

// ALPN returns the negotiated plane protocol.
func (c *Conn) ALPN() string { return c.alpn }

// Inbound reports whether the peer dialled us.
func (c *Conn) Inbound() bool { return c.inbound }

// RemoteAddr returns the peer's UDP address.
func (c *Conn) RemoteAddr() net.Addr { return c.qc.RemoteAddr() }

// Context is done when the connection closes, for any reason.
func (c *Conn) Context() context.Context { return c.qc.Context() }

// Done is closed when the connection closes.
func (c *Conn) Done() <-chan struct{} { return c.qc.Context().Done() }

// Err returns nil while the connection is open, then why it closed:
// ErrUnhealthy after failed pings, ErrClosed after Close or endpoint
// shutdown, else the QUIC error (a *quic.ApplicationError when the peer
// closed it).
func (c *Conn) Err() error {
	c.mu.Lock()
	err := c.localErr
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if c.qc.Context().Err() == nil {
		return nil
	}
	return context.Cause(c.qc.Context())
}

// Close closes the connection; the peer sees a normal close.
func (c *Conn) Close() error { return c.closeWith(ErrClosed, CodeNormal, "closed") }

func (c *Conn) closeWith(reason error, code quic.ApplicationErrorCode, msg string) error {
	c.mu.Lock()
	if c.localErr == nil {
		c.localErr = reason
	}
	c.mu.Unlock()
	return c.qc.CloseWithError(code, msg)
}

func (c *Conn) alive() bool { return c.qc.Context().Err() == nil }

// OpenStream opens a bidirectional stream, waiting for stream credit.
func (c *Conn) OpenStream(ctx context.Context) (*quic.Stream, error) {
	return c.qc.OpenStreamSync(ctx)
}

// AcceptStream returns the next bidirectional stream the peer opened.
func (c *Conn) AcceptStream(ctx context.Context) (*quic.Stream, error) {
	return c.qc.AcceptStream(ctx)
}
