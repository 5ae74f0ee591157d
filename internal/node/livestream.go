package node

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skulk/skulk/internal/platform/ids"
)

// liveCheckEvery is how often a data stream checks that its node is still
// a member.
const liveCheckEvery = 200 * time.Millisecond

// dialLive wraps the data plane's dial: a stream to a node closes as soon
// as the membership declares the node gone. A request whose instance's
// first rank runs on a node cut off from this one then ends with the
// gateway's "went away" error event within the membership's failure
// detection (about two seconds), where the QUIC connection alone would
// notice only after its pings ran out (tens of seconds).
func (p *peers) dialLive(dial func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error)) func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error) {
	return func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error) {
		s, err := dial(ctx, node)
		if err != nil {
			return nil, err
		}
		ls := &liveStream{ReadWriteCloser: s, node: node, done: make(chan struct{})}
		// Owned by the stream: Close stops it.
		go ls.watch(func() bool {
			m := p.get()
			if m == nil {
				return true
			}
			_, ok := m.Member(node)
			return ok
		})
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
