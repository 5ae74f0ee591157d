package transport

import (
	"context"
	"crypto/ed25519"
	"net"
	"sync"
	"sync/atomic"

	"github.com/quic-go/quic-go"

	"github.com/skulk/skulk/internal/ids"
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

// SendStream is the sending half of a unidirectional stream.
type SendStream struct{ *quic.SendStream }

// Abort resets the stream and unblocks a pending Write.
func (s *SendStream) Abort() { s.CancelWrite(0) }

// RecvStream is the receiving half of a unidirectional stream.
type RecvStream struct{ *quic.ReceiveStream }

// Abort stops reading and unblocks a pending Read.
func (s *RecvStream) Abort() { s.CancelRead(0) }

// OpenUniStream opens a unidirectional stream, waiting for stream credit.
func (c *Conn) OpenUniStream(ctx context.Context) (*SendStream, error) {
	s, err := c.qc.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return &SendStream{s}, nil
}

// AcceptUniStream returns the next unidirectional stream the peer opened.
func (c *Conn) AcceptUniStream(ctx context.Context) (*RecvStream, error) {
	s, err := c.qc.AcceptUniStream(ctx)
	if err != nil {
		return nil, err
	}
	return &RecvStream{s}, nil
}

// SendStreamer is the method set the edge plane needs from a send stream.
type SendStreamer interface {
	Write(p []byte) (int, error)
	Close() error
	Abort()
}

// RecvStreamer is the method set the edge plane needs from a receive stream.
type RecvStreamer interface {
	Read(p []byte) (int, error)
	Abort()
}

// EdgeConn adapts a Conn to a consumer's uni-stream interface without this
// package importing the consumer: instantiated as
// EdgeConn[dataplane.SendStream, dataplane.RecvStream], its method set is
// exactly dataplane.PeerConn's.
type EdgeConn[S SendStreamer, R RecvStreamer] struct{ C *Conn }

// Edge wraps c for a consumer whose stream interfaces are S and R.
func Edge[S SendStreamer, R RecvStreamer](c *Conn) EdgeConn[S, R] { return EdgeConn[S, R]{C: c} }

// OpenUniStream opens a unidirectional stream on the wrapped connection.
func (e EdgeConn[S, R]) OpenUniStream(ctx context.Context) (S, error) {
	var zero S
	s, err := e.C.OpenUniStream(ctx)
	if err != nil {
		return zero, err
	}
	v, ok := any(s).(S)
	if !ok {
		s.Abort()
		return zero, ErrStreamType
	}
	return v, nil
}

// AcceptUniStream accepts a unidirectional stream on the wrapped connection.
func (e EdgeConn[S, R]) AcceptUniStream(ctx context.Context) (R, error) {
	var zero R
	s, err := e.C.AcceptUniStream(ctx)
	if err != nil {
		return zero, err
	}
	v, ok := any(s).(R)
	if !ok {
		s.Abort()
		return zero, ErrStreamType
	}
	return v, nil
}
