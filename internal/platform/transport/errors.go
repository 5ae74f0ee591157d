package transport

import (
	"errors"
	"fmt"
	"strings"

	"github.com/quic-go/quic-go"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Sentinel errors; match them with errors.Is.
var (
	ErrClosed          = errors.New("transport: endpoint closed")
	ErrClusterMismatch = errors.New("different cluster key")
	ErrNetworkVersion  = errors.New("different network version")
	ErrPeerRejected    = errors.New("peer identity rejected")
	ErrProtocol        = errors.New("transport handshake protocol error")
	ErrNoHandler       = errors.New("no handler for the ALPN")
	ErrUnhealthy       = errors.New("transport: connection unhealthy")
	ErrBadConfig       = errors.New("transport: invalid config")
)

// Application error codes carried by QUIC CONNECTION_CLOSE frames, so the
// refused side learns why.
const (
	CodeNormal          quic.ApplicationErrorCode = 0
	CodeClusterMismatch quic.ApplicationErrorCode = 0x5301
	CodeNetworkVersion  quic.ApplicationErrorCode = 0x5302
	CodePeerRejected    quic.ApplicationErrorCode = 0x5303
	CodeUnhealthy       quic.ApplicationErrorCode = 0x5304
	CodeShutdown        quic.ApplicationErrorCode = 0x5305
	CodeProtocol        quic.ApplicationErrorCode = 0x5306
	CodeNoHandler       quic.ApplicationErrorCode = 0x5307
)

func codeFor(reason error) quic.ApplicationErrorCode {
	switch {
	case errors.Is(reason, ErrClusterMismatch):
		return CodeClusterMismatch
	case errors.Is(reason, ErrNetworkVersion):
		return CodeNetworkVersion
	case errors.Is(reason, ErrPeerRejected):
		return CodePeerRejected
	case errors.Is(reason, ErrNoHandler):
		return CodeNoHandler
	default:
		return CodeProtocol
	}
}

func reasonFor(code quic.ApplicationErrorCode) error {
	switch code {
	case CodeClusterMismatch:
		return ErrClusterMismatch
	case CodeNetworkVersion:
		return ErrNetworkVersion
	case CodePeerRejected:
		return ErrPeerRejected
	case CodeNoHandler:
		return ErrNoHandler
	case CodeUnhealthy:
		return ErrUnhealthy
	case CodeShutdown:
		return ErrClosed
	default:
		return ErrProtocol
	}
}

// RefusedError is an authentication failure during a handshake. Remote says
// which side refused: true when the peer refused us (we learnt it from the
// QUIC close), false when we refused the peer.
type RefusedError struct {
	Addr   string     // the peer's UDP address
	Peer   ids.NodeID // the peer's claimed node id, when known
	Remote bool
	Reason error  // ErrClusterMismatch, ErrNetworkVersion, ErrPeerRejected, ErrProtocol, ErrNoHandler
	Detail string // human detail, never a secret
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	if e.Remote {
		fmt.Fprintf(&b, "transport: refused by peer %s", e.Addr)
	} else {
		fmt.Fprintf(&b, "transport: refused peer %s", e.Addr)
	}
	if e.Peer != "" {
		fmt.Fprintf(&b, " (node %s)", e.Peer)
	}
	fmt.Fprintf(&b, ": %v", e.Reason)
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	return b.String()
}

func (e *RefusedError) Unwrap() error { return e.Reason }

// AddrError is one failed address of a Dial.
type AddrError struct {
	Addr string
	Err  error
}

// DialError reports that no address of a peer gave a verified connection.
type DialError struct {
	Peer     ids.NodeID
	ALPN     string
	Attempts []AddrError
}

func (e *DialError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "transport: dial %s on %s failed", e.Peer, e.ALPN)
	if len(e.Attempts) == 0 {
		b.WriteString(": no address")
	}
	for i, a := range e.Attempts {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %v", a.Addr, a.Err)
	}
	return b.String()
}

// Unwrap exposes every attempt's error to errors.Is and errors.As.
func (e *DialError) Unwrap() []error {
	out := make([]error, len(e.Attempts))
	for i, a := range e.Attempts {
		out[i] = a.Err
	}
	return out
}
