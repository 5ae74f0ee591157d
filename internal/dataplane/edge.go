package dataplane

import (
	"context"
	"encoding/binary"
	"io"
)

// EdgeALPN is the edge plane's ALPN; the transport package negotiates it.
const EdgeALPN = "skulk/edge/1"

// PreambleLen is the size of the edge id that starts every edge stream.
const PreambleLen = 8

// PeerConn is an authenticated connection to one peer on the edge ALPN. The
// transport package provides it (quic-go in production); dataplane only
// opens and accepts unidirectional streams on it.
type PeerConn interface {
	OpenUniStream(ctx context.Context) (SendStream, error)
	AcceptUniStream(ctx context.Context) (RecvStream, error)
}

// SendStream is the sending half of a uni-stream. Write returns once the
// transport accepted every byte (QUIC flow control blocks it). Abort resets
// the stream and unblocks a pending Write.
type SendStream interface {
	io.WriteCloser
	Abort()
}

// RecvStream is the receiving half of a uni-stream. Abort stops reading and
// unblocks a pending Read.
type RecvStream interface {
	io.Reader
	Abort()
}

// Dialer returns a connection to peer on the edge ALPN.
type Dialer func(ctx context.Context, peer NodeID) (PeerConn, error)

func putPreamble(b []byte, e EdgeID) { binary.BigEndian.PutUint64(b, uint64(e)) }

func readPreamble(r io.Reader) (EdgeID, error) {
	var b [PreambleLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return EdgeID(binary.BigEndian.Uint64(b[:])), nil
}
