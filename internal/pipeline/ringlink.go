package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/skulk/skulk/internal/dataplane"
)

// RingLink is one end of an edge over a data-plane ring (internal/dataplane):
// the sending end frames each message as one object record into the ring's
// Producer, the receiving end parses records out of its Consumer. The two
// ends may live in different processes that map the same arena; across
// nodes, the node's driver pumps the ring bytes over a QUIC uni-stream
// unchanged.
//
// Each record's object id and sequence count the edge's objects from 0 (the
// edge's ObjectSpec is SequenceContiguous, so a lost or repeated object is
// an error), its flags carry the pipeline object's Kind.
//
// Close ends the edge: the sending end closes the ring (its reader sees the
// end after the last whole object), the receiving end tells the producer
// nothing more is read; both unblock their own pending call.
type RingLink struct {
	w    *dataplane.ObjectWriter // sending end
	r    *dataplane.ObjectReader // receiving end
	p    *dataplane.Producer
	c    *dataplane.Consumer
	next uint64 // the next object's id and sequence; owned by the sending goroutine

	life context.Context // cancelled by Close
	stop context.CancelFunc
	once sync.Once
}

// ObjectSpec is the record contract of a pipeline edge whose objects are at
// most maxObject bytes (see MaxObjectBytes).
func ObjectSpec(maxObject uint64) dataplane.ObjectSpec {
	return dataplane.ObjectSpec{MaxExtent: maxObject, Alignment: 4, Sequence: dataplane.SequenceContiguous}
}

// NewRingSender is the sending end of edge over p. logger may be nil.
func NewRingSender(p *dataplane.Producer, edge dataplane.EdgeID, maxObject uint64, id dataplane.Identity, logger *slog.Logger) *RingLink {
	l := &RingLink{p: p, w: dataplane.NewObjectWriter(p, edge, ObjectSpec(maxObject), id, logger)}
	l.life, l.stop = context.WithCancel(context.Background())
	return l
}

// NewRingReceiver is the receiving end of edge over c. logger may be nil.
func NewRingReceiver(c *dataplane.Consumer, edge dataplane.EdgeID, maxObject uint64, id dataplane.Identity, logger *slog.Logger) *RingLink {
	l := &RingLink{c: c, r: dataplane.NewObjectReader(c, edge, ObjectSpec(maxObject), id, logger)}
	l.life, l.stop = context.WithCancel(context.Background())
	return l
}

// Send writes b as one object record, waiting for ring space.
func (l *RingLink) Send(ctx context.Context, b []byte) error {
	if l.w == nil {
		return errors.New("pipeline: Send on the receiving end of a ring link")
	}
	ctx, cancel := l.merge(ctx)
	defer cancel()
	var flags uint32
	if len(b) > 5 {
		flags = uint32(b[5]) // the object's kind, for the data plane's logs
	}
	err := l.w.Write(ctx, dataplane.ObjectID(l.next), l.next, flags, b)
	if err != nil {
		return l.mapErr(err)
	}
	l.next++
	return nil
}

// Recv returns the next whole object's payload.
func (l *RingLink) Recv(ctx context.Context) ([]byte, error) {
	if l.r == nil {
		return nil, errors.New("pipeline: Recv on the sending end of a ring link")
	}
	ctx, cancel := l.merge(ctx)
	defer cancel()
	o, err := l.r.Next(ctx, nil)
	if err != nil {
		return nil, l.mapErr(err)
	}
	return o.Payload, nil
}

// Close ends this side of the ring and unblocks this side's pending call.
func (l *RingLink) Close() error {
	var err error
	l.once.Do(func() {
		l.stop()
		if l.p != nil {
			err = l.p.Close()
		} else {
			err = l.c.Close()
		}
	})
	return err
}

// merge ties a call's context to the link's life.
func (l *RingLink) merge(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(l.life, cancel)
	return ctx, func() { stop(); cancel() }
}

// mapErr turns the ring's end of stream into ErrLinkClosed and keeps every
// other cause (ring faults, malformed records, the caller's context).
func (l *RingLink) mapErr(err error) error {
	switch {
	case l.life.Err() != nil:
		return ErrLinkClosed
	case errors.Is(err, io.EOF), errors.Is(err, dataplane.ErrRingClosed):
		return fmt.Errorf("%w: %w", ErrLinkClosed, err)
	}
	return err
}
