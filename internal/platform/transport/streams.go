package transport

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Stream adapts a QUIC stream to io.ReadWriteCloser: Close ends both
// directions, so a blocked reader on either side wakes up.
type Stream struct{ *quic.Stream }

// Close cancels the read side and closes the write side.
func (s Stream) Close() error {
	s.Stream.CancelRead(0)
	return s.Stream.Close()
}

// ServeStreams is a Handler that serves every stream of an inbound
// connection with f, each as a Stream on its own goroutine, and waits for
// them before it returns.
func ServeStreams(f func(ctx context.Context, c *Conn, s io.ReadWriteCloser)) Handler {
	return func(ctx context.Context, c *Conn) {
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			s, err := c.AcceptStream(ctx)
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := Stream{s}
				defer st.Close()
				f(ctx, c, st)
			}()
		}
	}
}

// liveCheckEvery is how often a data stream checks that its node is still
// a member.
const liveCheckEvery = 200 * time.Millisecond

// DialLive wraps the data plane's dial: a stream to a node closes as soon
// as alive says the node is gone (the membership declared it so). A request whose instance's
// first rank runs on a node cut off from this one then ends with the
// gateway's "went away" error event within the membership's failure
// detection (about two seconds), where the QUIC connection alone would
// notice only after its pings ran out (tens of seconds).
func DialLive(dial func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error), alive func(ids.NodeID) bool) func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error) {
	return func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error) {
		s, err := dial(ctx, node)
		if err != nil {
			return nil, err
		}
		ls := &liveStream{ReadWriteCloser: s, node: node, done: make(chan struct{})}
		// Owned by the stream: Close stops it.
		go ls.watch(func() bool { return alive(node) })
		return ls, nil
	}
}

// liveStream is a stream that a watcher closes when its node goes.
type liveStream struct {
	io.ReadWriteCloser
	node ids.NodeID
	done chan struct{}
	once sync.Once
	gone atomic.Bool // the watcher closed it: the node left
}

// Read says why the stream ended when its node left.
func (s *liveStream) Read(p []byte) (int, error) {
	n, err := s.ReadWriteCloser.Read(p)
	if err != nil && s.gone.Load() {
		err = fmt.Errorf("the cluster lost node %s (down or cut off)", s.node)
	}
	return n, err
}

func (s *liveStream) Close() error {
	s.once.Do(func() { close(s.done) })
	return s.ReadWriteCloser.Close()
}

func (s *liveStream) watch(alive func() bool) {
	tick := time.NewTicker(liveCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
			if !alive() {
				s.gone.Store(true)
				s.Close()
				return
			}
		}
	}
}
