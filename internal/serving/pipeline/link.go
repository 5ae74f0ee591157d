package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Link is one direction of an edge between two ranks: it carries whole
// objects, in order. The sending rank calls only Send and the receiving
// rank only Recv, each from one goroutine; Close may come from any
// goroutine, at any time, and more than once, and unblocks a pending Send
// or Recv of the end it is called on. Send and Recv also return when their
// context ends.
//
// Send hands b over: the caller does not touch it afterwards. Recv returns a
// message the caller owns. Once either end closed the link, or it failed,
// both report an error; ErrLinkClosed (errors.Is) means it was closed.
type Link interface {
	Send(ctx context.Context, b []byte) error
	Recv(ctx context.Context) ([]byte, error)
	Close() error
}

// Sentinel conditions callers branch on with errors.Is.
var (
	// ErrLinkClosed reports a link that one of its ends closed.
	ErrLinkClosed = errors.New("pipeline: link closed")
	// ErrStopped ends the sequences of a stage that was stopped.
	ErrStopped = errors.New("pipeline: stage stopped")
	// ErrCancelled ends a sequence its owner cancelled.
	ErrCancelled = errors.New("pipeline: sequence cancelled")
	// ErrNotHead refuses a submission to a stage that is not rank 0.
	ErrNotHead = errors.New("pipeline: only the first rank takes sequences")
	// ErrNoToken ends a sequence whose logits left nothing to sample (all
	// masked or not finite).
	ErrNoToken = errors.New("pipeline: the sampler found no token")
	// ErrConstraint ends a sequence whose constraint the last rank could
	// not build or apply (its log says why).
	ErrConstraint = errors.New("pipeline: the last rank could not apply the sequence's constraint")
)

// FaultError is the end of every sequence in flight on a pipeline one of
// whose stages failed: a link closed or broke, an object violated the
// protocol, or a step failed. The pipeline is fail-stop:
// a faulted stage takes no more work.
type FaultError struct {
	Rank int    // the rank that saw the fault
	Op   string // "receive", "send" or "step"
	Err  error
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("pipeline: rank %d %s: %v", e.Rank, e.Op, e.Err)
}

func (e *FaultError) Unwrap() error { return e.Err }

// chanLink is an in-process Link over a buffered channel. Both ends share
// one value.
type chanLink struct {
	ch     chan []byte
	closed chan struct{}
	once   sync.Once
}

// NewChanLink returns an in-process link that buffers up to capacity
// objects before Send waits.
func NewChanLink(capacity int) Link {
	return &chanLink{ch: make(chan []byte, max(capacity, 0)), closed: make(chan struct{})}
}

func (l *chanLink) Send(ctx context.Context, b []byte) error {
	select {
	case <-l.closed:
		return ErrLinkClosed
	default:
	}
	select {
	case l.ch <- b:
		return nil
	case <-l.closed:
		return ErrLinkClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *chanLink) Recv(ctx context.Context) ([]byte, error) {
	select {
	case <-l.closed:
		return nil, ErrLinkClosed
	default:
	}
	select {
	case b := <-l.ch:
		return b, nil
	case <-l.closed:
		return nil, ErrLinkClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *chanLink) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}
