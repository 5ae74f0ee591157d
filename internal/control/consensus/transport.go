package consensus

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// MaxMessage bounds one raft message on the wire; a snapshot is the
// largest (the State, a few MiB at most).
const MaxMessage = 128 << 20

// ErrMessage reports a frame that breaks the protocol.
var ErrMessage = errors.New("consensus: malformed raft message")

// WriteMessage writes m as a 4-byte big-endian length and its protobuf.
func WriteMessage(w io.Writer, m *pb.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	if len(b) > MaxMessage {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrMessage, len(b), MaxMessage)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ReadMessage reads one message WriteMessage wrote.
func ReadMessage(r io.Reader) (*pb.Message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxMessage {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrMessage, n, MaxMessage)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	m := &pb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMessage, err)
	}
	return m, nil
}

// Serve steps every message a peer sends on one stream into n. The peer is
// who the transport authenticated: a message claiming another sender is
// refused and the stream closed.
func Serve(ctx context.Context, n *Node, peer uint64, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		m, err := ReadMessage(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.GetFrom() != peer {
			return fmt.Errorf("%w: from %x on the stream of %x", ErrMessage, m.GetFrom(), peer)
		}
		if err := n.Step(ctx, m); err != nil && !errors.As(err, new(*ErrHalted)) {
			return err
		}
	}
}

// Sender keeps one outbound stream per peer and queues messages to each;
// a full queue drops (raft resends), a broken stream is reported to raft
// and redialled on the next message.
type Sender struct {
	Dial   func(ctx context.Context, to uint64) (io.WriteCloser, error)
	Node   *Node
	Logger *slog.Logger

	mu    sync.Mutex
	peers map[uint64]*peerQueue
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

type peerQueue struct{ ch chan *pb.Message }

// peerQueueLen bounds each peer's backlog.
const peerQueueLen = 4096

// Start readies the sender; Close stops its goroutines.
func (s *Sender) Start(ctx context.Context) {
	s.ctx, s.stop = context.WithCancel(ctx)
	s.peers = map[uint64]*peerQueue{}
}

// Close stops every peer's goroutine and waits for them.
func (s *Sender) Close() {
	s.stop()
	s.wg.Wait()
}

// Send queues msgs; it never blocks.
func (s *Sender) Send(msgs []*pb.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	for _, m := range msgs {
		to := m.GetTo()
		q, ok := s.peers[to]
		if !ok {
			q = &peerQueue{ch: make(chan *pb.Message, peerQueueLen)}
			s.peers[to] = q
			s.wg.Add(1)
			go s.run(to, q)
		}
		select {
		case q.ch <- m:
		default:
			if m.GetType() == pb.MsgSnap {
				s.Node.ReportSnapshot(to, false)
			}
		}
	}
}

func (s *Sender) run(to uint64, q *peerQueue) {
	defer s.wg.Done()
	var w io.WriteCloser
	var bw *bufio.Writer
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	for {
		var batch []*pb.Message
		select {
		case <-s.ctx.Done():
			return
		case m := <-q.ch:
			batch = append(batch, m)
		}
		// Whatever else is queued goes in the same flush.
		for len(batch) < 256 && len(q.ch) > 0 {
			batch = append(batch, <-q.ch)
		}
		if w == nil {
			dctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
			c, err := s.Dial(dctx, to)
			cancel()
			if err != nil {
				s.failed(to, q, batch, err)
				continue
			}
			w, bw = c, bufio.NewWriterSize(c, 64<<10)
		}
		var err error
		for _, m := range batch {
			if err = WriteMessage(bw, m); err != nil {
				break
			}
		}
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			w.Close()
			w, bw = nil, nil
			s.failed(to, q, batch, err)
			continue
		}
		for _, m := range batch {
			if m.GetType() == pb.MsgSnap {
				s.Node.ReportSnapshot(to, true)
			}
		}
	}
}

// failed reports an undelivered batch to raft and drops the backlog: raft
// resends from its progress once the peer answers again.
func (s *Sender) failed(to uint64, q *peerQueue, batch []*pb.Message, err error) {
	s.Logger.Debug("raft messages not delivered", "to", fmt.Sprintf("%x", to), "count", len(batch), "err", err)
	s.Node.ReportUnreachable(to)
	for _, m := range batch {
		if m.GetType() == pb.MsgSnap {
			s.Node.ReportSnapshot(to, false)
		}
	}
	for len(q.ch) > 0 {
		if m := <-q.ch; m.GetType() == pb.MsgSnap {
			s.Node.ReportSnapshot(to, false)
		}
	}
}
