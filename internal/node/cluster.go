package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/plane"
	"github.com/skulk/skulk/internal/observe/telemetry"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/transport"
	"github.com/skulk/skulk/internal/platform/version"
)

// Software identity, advertised in node meta and diagnostics: the build's
// own (internal/platform/version), which `skulk version` and /api/version report too.
var (
	SoftwareVersion = version.Version()
	SoftwareCommit  = version.Commit()
)

// boundAddr is the address a listener configured with HOST:PORT listens
// on, with the port it got. The listener's own address will not do: Go
// serves 0.0.0.0 on a dual-stack socket that reports itself as [::], which
// would advertise IPv6 addresses the operator did not ask for. A host that
// is a name (or empty) leaves the listener's address.
func boundAddr(configured string, actual net.Addr) netip.AddrPort {
	got := addrPort(actual)
	host, _, err := net.SplitHostPort(configured)
	if err != nil {
		return got
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return got
	}
	return netip.AddrPortFrom(ip.Unmap(), got.Port())
}

func addrPort(a net.Addr) netip.AddrPort {
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

func strs(aps []netip.AddrPort) []string {
	out := make([]string, len(aps))
	for i, a := range aps {
		out[i] = a.String()
	}
	return out
}

// peers is the membership seen through what the rest of the node needs.
type peers struct {
	m atomic.Pointer[membership.Membership]
	// quicBind is the address the QUIC endpoint was configured to bind,
	// whose family dial keeps to. It is written once, before m is stored;
	// dial reads it only after loading m.
	quicBind netip.Addr
}

func (p *peers) get() *membership.Membership { return p.m.Load() }

// verify is the transport's peer check: the certificate key must be the one
// the member gossiped.
func (p *peers) verify(node ids.NodeID, key []byte) error {
	m := p.get()
	if m == nil {
		return fmt.Errorf("membership is not up yet")
	}
	return m.VerifyPeer(node, key)
}

// dial opens a stream to node on alpn over the endpoint.
func (p *peers) dial(ep *transport.Endpoint, alpn string) func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error) {
	return func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error) {
		m := p.get()
		if m == nil {
			return nil, fmt.Errorf("membership is not up yet")
		}
		mem, ok := m.Member(node)
		if !ok {
			return nil, fmt.Errorf("node %s is not a live member", node)
		}
		addrs := membership.Reachable(p.quicBind, mem.Meta.QUIC)
		if len(addrs) == 0 {
			return nil, fmt.Errorf("node %s advertises no QUIC address of this node's IP family (%s; --quic-addr %s): bind [::]:PORT to use IPv4 and IPv6",
				node, strs(mem.Meta.QUIC), p.quicBind)
		}
		c, err := ep.Dial(ctx, node, strs(addrs), alpn)
		if err != nil {
			return nil, err
		}
		s, err := c.OpenStream(ctx)
		if err != nil {
			return nil, err
		}
		return transport.Stream{Stream: s}, nil
	}
}

// alive says whether node is a live member (true before the membership is
// up: nothing says otherwise yet).
func (p *peers) alive(node ids.NodeID) bool {
	m := p.get()
	if m == nil {
		return true
	}
	_, ok := m.Member(node)
	return ok
}

// members lists the live members' ids.
func (p *peers) members() []ids.NodeID {
	m := p.get()
	if m == nil {
		return nil
	}
	return m.MemberIDs()
}

// nodes reports every live member's resources for placement; a member whose
// reading has not arrived is pending.
func (p *peers) nodes() []placement.Node {
	m := p.get()
	if m == nil {
		return nil
	}
	res := map[ids.NodeID]telemetry.Resources{}
	for _, r := range m.Readings() {
		if r.Key != telemetry.ResourcesKey {
			continue
		}
		var v telemetry.Resources
		if json.Unmarshal(r.Value, &v) == nil {
			res[r.Node] = v
		}
	}
	var out []placement.Node
	for _, mem := range m.Members() {
		v, ok := res[mem.Node]
		out = append(out, placement.Node{ID: string(mem.Node), TotalBytes: v.TotalBytes, AvailableBytes: v.AvailableBytes,
			Backends: v.Backends, Pending: !ok, MaxInstances: v.MaxInstances, Name: v.Name, Cores: v.CPU.Cores})
	}
	return out
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

// advertisedGossip lists the gossip addresses to put in an invite: every
// interface address when the gossip port is bound to all of them, else the
// address memberlist advertises.
func advertisedGossip(bind string, self netip.AddrPort) []netip.AddrPort {
	if ap, err := netip.ParseAddrPort(bind); err == nil && ap.Addr().IsUnspecified() {
		return membership.Advertised(netip.AddrPortFrom(ap.Addr(), self.Port()))
	}
	return []netip.AddrPort{self}
}
