package link

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/serving/pipeline"
)

// ConnLink is one direction of a link over a byte stream (a Unix-domain
// socket to the node that relays it, in practice): each object is framed
// as a 4-byte little-endian length followed by the object. One end only
// sends, the other only receives. The frame is checked against the largest
// object the pipeline sends, so a corrupt length fails the link instead of
// allocating gigabytes.
type ConnLink struct {
	c         net.Conn
	maxObject uint64

	mu     sync.Mutex // serialises Close with the error mapping
	closed bool
	once   sync.Once
}

var _ pipeline.Link = (*ConnLink)(nil)

// NewConnLink returns a link over c whose objects are at most maxObject
// bytes. The link owns c: Close closes it.
func NewConnLink(c net.Conn, maxObject uint64) *ConnLink {
	return &ConnLink{c: c, maxObject: maxObject}
}

// Send writes one framed object.
func (l *ConnLink) Send(ctx context.Context, b []byte) error {
	if uint64(len(b)) > l.maxObject {
		return fmt.Errorf("pipeline: object of %d bytes exceeds the link's %d", len(b), l.maxObject)
	}
	stop := context.AfterFunc(ctx, func() { l.c.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(b)))
	bufs := net.Buffers{hdr[:], b}
	_, err := bufs.WriteTo(l.c)
	return l.mapErr(ctx, err)
}

// Recv reads one framed object.
func (l *ConnLink) Recv(ctx context.Context) ([]byte, error) {
	stop := context.AfterFunc(ctx, func() { l.c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var hdr [4]byte
	if _, err := io.ReadFull(l.c, hdr[:]); err != nil {
		return nil, l.mapErr(ctx, err)
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n == 0 || uint64(n) > l.maxObject {
		l.Close()
		return nil, &pipeline.ProtocolError{Detail: fmt.Sprintf("a frame of %d bytes (the link takes 1 to %d)", n, l.maxObject)}
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(l.c, b); err != nil {
		return nil, l.mapErr(ctx, err)
	}
	return b, nil
}

// Close closes the connection; it unblocks a pending Send or Recv.
func (l *ConnLink) Close() error {
	l.once.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		l.c.Close()
	})
	return nil
}

func (l *ConnLink) mapErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		// The deadline set to interrupt the call leaves the stream in an
		// unknown state: the link is done.
		l.Close()
		return ctx.Err()
	}
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("%w: %v", pipeline.ErrLinkClosed, err)
	}
	return err
}
