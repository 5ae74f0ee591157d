package node

import (
	"context"
	"time"

	"github.com/skulk/skulk/internal/control/plane"
)

// positionEvery is how often a node republishes its control-plane position.
const positionEvery = time.Second

// publishPosition publishes this node's position as telemetry until ctx
// ends: diagnostics read it, and fresh nodes learn from it whether a
// cluster exists to join.
func (n *fabric) publishPosition(ctx context.Context) {
	t := time.NewTicker(positionEvery / 4)
	defer t.Stop()
	var last []byte
	var at time.Time
	for {
		b := n.ctl.Position().Encode()
		if string(b) != string(last) || time.Since(at) >= positionEvery {
			if err := n.mem.Publish(plane.PositionKey, b); err == nil {
				last, at = b, time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// positions lists the live members with their gossip addresses and the
// positions they published, for the control plane.
func (p *peers) positions() []plane.Peer {
	m := p.get()
	if m == nil {
		return nil
	}
	pos := map[string]plane.Position{}
	for _, r := range m.Readings() {
		if r.Key != plane.PositionKey {
			continue
		}
		if v, err := plane.DecodePosition(r.Value); err == nil {
			pos[string(r.Node)] = v
		}
	}
	var out []plane.Peer
	for _, mem := range m.Members() {
		v, ok := pos[string(mem.Node)]
		out = append(out, plane.Peer{Node: mem.Node, Gossip: mem.Gossip.String(), Position: v, Known: ok})
	}
	return out
}
