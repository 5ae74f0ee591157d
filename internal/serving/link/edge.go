package link

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// A runner reaches its neighbours through the node that spawned it: it
// opens two connections to the node's edge socket (a Unix-domain socket),
// one for the link it receives on (Dir "in": the link from the previous
// rank) and one for the link it sends on (Dir "out": the link to the next
// rank). Each connection opens with an EdgeHello line (JSON, then "\n");
// the node answers with the single byte EdgeReady once it has relayed the
// connection through to the neighbour's, and then carries ConnLink frames.
// Link k runs from rank k to rank (k+1) mod ranks.

// Edge directions.
const (
	EdgeIn  = "in"
	EdgeOut = "out"
)

// EdgeReady is the node's answer on an edge connection that is relayed
// through to the other end.
const EdgeReady byte = 'K'

// maxHello bounds an EdgeHello line.
const maxHello = 4096

// EdgeHello names an edge connection: which instance, rank and direction.
type EdgeHello struct {
	Instance string `json:"instance"`
	Rank     int    `json:"rank"`
	Ranks    int    `json:"ranks"`
	Dir      string `json:"dir"`
}

// Link is the index of the link the connection is an end of.
func (h EdgeHello) Link() int {
	if h.Dir == EdgeIn {
		return (h.Rank + h.Ranks - 1) % h.Ranks
	}
	return h.Rank
}

// DialEdge connects to the node's edge socket and says hello; the
// connection is ready for ConnLink frames once AwaitEdge has returned.
func DialEdge(socket string, h EdgeHello, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("unix", socket, timeout)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(h)
	c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write(append(b, '\n')); err != nil {
		c.Close()
		return nil, err
	}
	c.SetWriteDeadline(time.Time{})
	return c, nil
}

// AwaitEdge waits until deadline for the node's EdgeReady on c.
func AwaitEdge(c net.Conn, deadline time.Time) error {
	c.SetReadDeadline(deadline)
	defer c.SetReadDeadline(time.Time{})
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return errors.New("the other end of the link did not connect in time")
		}
		return fmt.Errorf("the node closed the link before it was connected: %w", err)
	}
	if b[0] != EdgeReady {
		return fmt.Errorf("the node answered %q on the link, not ready", b[0])
	}
	return nil
}

// ReadEdgeHello reads a connection's hello (the node's side). It reads
// byte by byte, so that nothing after the line is consumed.
func ReadEdgeHello(c net.Conn, timeout time.Duration) (EdgeHello, error) {
	var h EdgeHello
	c.SetReadDeadline(time.Now().Add(timeout))
	defer c.SetReadDeadline(time.Time{})
	r := bufio.NewReaderSize(oneByte{c}, 16)
	var line []byte
	for len(line) <= maxHello {
		b, err := r.ReadByte()
		if err != nil {
			return h, err
		}
		if b == '\n' {
			if err := json.Unmarshal(line, &h); err != nil {
				return h, fmt.Errorf("edge hello: %w", err)
			}
			if h.Ranks < 2 || h.Rank < 0 || h.Rank >= h.Ranks || (h.Dir != EdgeIn && h.Dir != EdgeOut) || h.Instance == "" {
				return h, fmt.Errorf("edge hello: bad %+v", h)
			}
			return h, nil
		}
		line = append(line, b)
	}
	return h, errors.New("edge hello: line too long")
}

// oneByte reads at most one byte per call.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}
