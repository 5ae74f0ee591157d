package link

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Edges is the node's side of its runners' pipeline links: a Unix-domain
// socket under the home (in a 0700 directory) that the runners of pipeline
// stages connect to, and a Relay that joins each link's two ends, here or
// through a QUIC stream (ALPN skulk/edge/1) to the node of the receiving
// rank.
type Edges struct {
	// Relay joins the links; the node sets its Wait before Serve.
	Relay  *Relay
	self   ids.NodeID
	socket string
	dial   func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error)

	mu     sync.Mutex
	placed map[string]placedRanks // by instance
}

// placedRanks is where an instance's ranks are, and when the worker said so.
type placedRanks struct {
	nodes []ids.NodeID // by rank
	at    time.Time
}

// forgetAfter is how old a placement must be before forget may drop it: a
// view of the State read before the worker placed it must not.
const forgetAfter = 30 * time.Second

// Open listens on the edge socket under home; dial opens a stream to
// another node's Accept.
func Open(home string, self ids.NodeID, dial func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error), log *slog.Logger) (*Edges, net.Listener, error) {
	dir := filepath.Join(home, "edges")
	// A Unix socket's path is limited to about 100 bytes.
	if len(dir) > 90 {
		d, err := os.MkdirTemp("", "skulk-edges-")
		if err != nil {
			return nil, nil, err
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, nil, err
	}
	sock := filepath.Join(dir, "edge.sock")
	os.Remove(sock) // a previous process's
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, nil, fmt.Errorf("link: edge socket %s: %w", sock, err)
	}
	e := &Edges{self: self, socket: sock, dial: dial, placed: map[string]placedRanks{}}
	e.Relay = &Relay{Route: e.route, Logger: log}
	return e, ln, nil
}

// Serve relays the runners' edge connections on ln until it is closed.
func (e *Edges) Serve(ctx context.Context, ln net.Listener) error { return e.Relay.Serve(ctx, ln) }

// SocketFor records where inst's ranks are and returns the socket its
// runners connect to (the worker's Edges).
func (e *Edges) SocketFor(inst ids.InstanceID, placement []event.Shard) string {
	nodes := make([]ids.NodeID, len(placement))
	for i, sh := range placement {
		nodes[i] = sh.Node
	}
	e.mu.Lock()
	e.placed[string(inst)] = placedRanks{nodes: nodes, at: time.Now()}
	e.mu.Unlock()
	return e.socket
}

// forget drops the ranks of the instances keep rejects.
func (e *Edges) forget(keep func(ids.InstanceID) bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for inst, p := range e.placed {
		if !keep(ids.InstanceID(inst)) && time.Since(p.at) > forgetAfter {
			delete(e.placed, inst)
		}
	}
}

func (e *Edges) route(instance string, link, ranks int) (func(ctx context.Context) (io.ReadWriteCloser, error), error) {
	e.mu.Lock()
	p, ok := e.placed[instance]
	e.mu.Unlock()
	nodes := p.nodes
	if !ok || len(nodes) != ranks {
		return nil, fmt.Errorf("instance %s has no pipeline of %d ranks on this node", instance, ranks)
	}
	next := nodes[(link+1)%ranks]
	if next == e.self {
		return nil, nil
	}
	return func(ctx context.Context) (io.ReadWriteCloser, error) { return e.dial(ctx, next) }, nil
}

// Accept takes a link's stream from the node of its sending rank.
func (e *Edges) Accept(ctx context.Context, s io.ReadWriteCloser) {
	e.Relay.Accept(ctx, s)
}
