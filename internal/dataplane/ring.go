package dataplane

import (
	"context"
	"fmt"
	"io"
	"runtime"
)

// Waker carries edge-triggered wake hints for one direction of one ring.
// Hints carry no byte counts; whoever wakes reloads the cursors. Rings may
// coalesce (a counter that several Rings bump once), but a Wait that starts
// after a Ring must return.
type Waker interface {
	Ring() error
	Wait(ctx context.Context) error
}

// spinChecks is how often a side re-reads the cursors (yielding between
// reads) before it arms its wake bit and sleeps; a short spin keeps a busy
// stream off the eventfd syscalls.
const spinChecks = 32

// Producer is the writing side of a ring. One goroutine uses it.
type Producer struct {
	rc       *ringCore
	readable Waker // rung after commit
	writable Waker // slept on while full
	write    uint64
	reserved uint64
}

// OpenProducer attaches to the ring described by l inside arena, which must
// have been initialised by InitRing.
func OpenProducer(arena []byte, l RingLayout, readable, writable Waker) (*Producer, error) {
	rc, err := openCore(arena, l)
	if err != nil {
		return nil, err
	}
	return &Producer{rc: rc, readable: readable, writable: writable, write: rc.commit.Load()}, nil
}

// ID names the ring.
func (p *Producer) ID() RingID { return p.rc.id }

// Reserve returns the largest contiguous free span at the write cursor; it
// is empty when the ring is full. Bytes written into it become visible only
// after Commit.
func (p *Producer) Reserve() ([]byte, error) {
	st := p.rc.state.Load()
	if st&stateFaulted != 0 {
		return nil, &RingFaultError{Ring: p.rc.id, Reason: RingStateInvalid, Detail: "ring marked faulted"}
	}
	if st&stateConsClose != 0 {
		return nil, ErrRingClosed
	}
	consume := p.rc.consume.Load()
	if err := p.rc.checkCursors(p.write, consume); err != nil {
		return nil, err
	}
	free := p.rc.capacity - (p.write - consume)
	start := p.write % p.rc.capacity
	n := min(free, p.rc.capacity-start)
	p.reserved = n
	return p.rc.data[start : start+n], nil
}

// Commit publishes n bytes of the last reserved span to the consumer and
// wakes it if it sleeps.
func (p *Producer) Commit(n int) error {
	if n < 0 || uint64(n) > p.reserved {
		return fmt.Errorf("dataplane: commit of %d bytes exceeds reserved %d", n, p.reserved)
	}
	if n == 0 {
		return nil
	}
	p.write += uint64(n)
	p.reserved -= uint64(n)
	p.rc.commit.Store(p.write) // release: payload bytes are valid before the cursor moves
	return p.wakeReader()
}

func (p *Producer) wakeReader() error {
	// Sequential consistency of sync/atomic makes this store-then-load pair
	// and the consumer's arm-then-recheck pair a Dekker handshake: at least
	// one side sees the other, so the empty->readable transition is never lost.
	if p.rc.wake.Load()&wakeReader == 0 {
		return nil
	}
	if p.rc.wake.And(^wakeReader)&wakeReader == 0 {
		return nil
	}
	return p.readable.Ring()
}

// WaitWritable blocks until the ring has free space, the consumer closed it,
// or ctx ends.
func (p *Producer) WaitWritable(ctx context.Context) error {
	for i := 0; ; i++ {
		span, err := p.Reserve()
		if err != nil || len(span) > 0 {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if i < spinChecks {
			runtime.Gosched()
			continue
		}
		p.rc.wake.Or(wakeWriter)
		if span, err := p.Reserve(); err != nil || len(span) > 0 {
			return err
		}
		if err := p.writable.Wait(ctx); err != nil {
			return err
		}
	}
}

// Write copies all of b into the ring, waiting for space as needed.
func (p *Producer) Write(ctx context.Context, b []byte) error {
	for len(b) > 0 {
		span, err := p.Reserve()
		if err != nil {
			return err
		}
		if len(span) == 0 {
			if err := p.WaitWritable(ctx); err != nil {
				return err
			}
			continue
		}
		n := copy(span, b)
		if err := p.Commit(n); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// Close marks the end of the byte stream; the consumer reads io.EOF once it
// has drained every committed byte.
func (p *Producer) Close() error {
	p.rc.state.Or(stateProdClose)
	return p.readable.Ring()
}

// Fault marks the ring faulted so that both sides stop.
func (p *Producer) Fault() error {
	p.rc.state.Or(stateFaulted)
	return p.readable.Ring()
}

// Consumer is the reading side of a ring. One goroutine uses it.
type Consumer struct {
	rc       *ringCore
	readable Waker // slept on while empty
	writable Waker // rung after release
	consume  uint64
}

// OpenConsumer attaches to the ring described by l inside arena.
func OpenConsumer(arena []byte, l RingLayout, readable, writable Waker) (*Consumer, error) {
	rc, err := openCore(arena, l)
	if err != nil {
		return nil, err
	}
	return &Consumer{rc: rc, readable: readable, writable: writable, consume: rc.consume.Load()}, nil
}

// ID names the ring.
func (c *Consumer) ID() RingID { return c.rc.id }

// Peek returns the contiguous committed span at the consume cursor. It is
// empty when nothing is readable; io.EOF means the producer closed and every
// byte has been consumed.
func (c *Consumer) Peek() ([]byte, error) {
	st := c.rc.state.Load()
	if st&stateFaulted != 0 {
		return nil, &RingFaultError{Ring: c.rc.id, Reason: RingStateInvalid, Detail: "ring marked faulted"}
	}
	commit := c.rc.commit.Load() // acquire: bytes below commit are valid
	if err := c.rc.checkCursors(commit, c.consume); err != nil {
		return nil, err
	}
	if commit == c.consume && st&stateProdClose != 0 {
		// The producer closes after its last commit, so one reload settles it.
		if commit = c.rc.commit.Load(); commit == c.consume {
			return nil, io.EOF
		}
		if err := c.rc.checkCursors(commit, c.consume); err != nil {
			return nil, err
		}
	}
	start := c.consume % c.rc.capacity
	n := min(commit-c.consume, c.rc.capacity-start)
	return c.rc.data[start : start+n], nil
}

// Release hands n consumed bytes back to the producer and wakes it if it
// sleeps. Call it only once the bytes are no longer needed.
func (c *Consumer) Release(n int) error {
	if n < 0 || uint64(n) > c.rc.commit.Load()-c.consume {
		return fmt.Errorf("dataplane: release of %d bytes exceeds readable", n)
	}
	if n == 0 {
		return nil
	}
	c.consume += uint64(n)
	c.rc.consume.Store(c.consume)
	if c.rc.wake.Load()&wakeWriter == 0 {
		return nil
	}
	if c.rc.wake.And(^wakeWriter)&wakeWriter == 0 {
		return nil
	}
	return c.writable.Ring()
}

// WaitReadable blocks until bytes are readable, the stream ended (nil; the
// next Peek reports io.EOF), or ctx ends.
func (c *Consumer) WaitReadable(ctx context.Context) error {
	for i := 0; ; i++ {
		span, err := c.Peek()
		if len(span) > 0 || err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if i < spinChecks {
			runtime.Gosched()
			continue
		}
		c.rc.wake.Or(wakeReader)
		if span, err := c.Peek(); len(span) > 0 || err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := c.readable.Wait(ctx); err != nil {
			return err
		}
	}
}

// Read copies up to len(b) bytes out of the ring, waiting until at least one
// is readable; it returns io.EOF at the end of the stream.
func (c *Consumer) Read(ctx context.Context, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		span, err := c.Peek()
		if err != nil {
			return 0, err
		}
		if len(span) > 0 {
			n := copy(b, span)
			return n, c.Release(n)
		}
		if err := c.WaitReadable(ctx); err != nil {
			return 0, err
		}
	}
}

// Close tells the producer that nothing more will be consumed.
func (c *Consumer) Close() error {
	c.rc.state.Or(stateConsClose)
	return c.writable.Ring()
}
