package membership

import (
	"net"
	"net/netip"

	sockaddr "github.com/hashicorp/go-sockaddr"
)

// Reachable keeps, in their order, the addresses of addrs that a node
// whose socket is bound to local should give to peers or dial: those of
// local's family. An IPv4 bind, 0.0.0.0 included, means IPv4: Go serves
// 0.0.0.0 on a dual-stack socket, but the operator asked for IPv4, and on
// an IPv4-only network an IPv6 address fails at every gossip round. A
// specific IPv6 bind means IPv6; only the IPv6 wildcard (::) means both.
// An invalid local keeps every address.
func Reachable(local netip.Addr, addrs []netip.AddrPort) []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range addrs {
		if SameFamily(local, a.Addr()) {
			out = append(out, a)
		}
	}
	return out
}

// SameFamily reports whether a socket bound to local serves peer (see
// Reachable).
func SameFamily(local, peer netip.Addr) bool {
	local, peer = local.Unmap(), peer.Unmap()
	switch {
	case !local.IsValid(), local.Is6() && local.IsUnspecified():
		return true
	case local.Is4():
		return peer.Is4()
	default:
		return peer.Is6()
	}
}

// pickAdvertise picks the gossip address to advertise for a bind to every
// interface: the first of candidates (in order of preference) of the
// bind's family that peers can reach, not an unspecified, multicast or
// link-local address. False when there is none.
func pickAdvertise(bind netip.Addr, candidates []netip.Addr) (netip.Addr, bool) {
	for _, c := range candidates {
		c = c.Unmap()
		if c.IsValid() && !c.IsUnspecified() && !c.IsMulticast() && !c.IsLinkLocalUnicast() && SameFamily(bind, c) {
			return c, true
		}
	}
	return netip.Addr{}, false
}

// advertiseCandidates lists this machine's addresses in memberlist's order
// of preference (private addresses, the default route's interface first),
// then the others, loopback last.
func advertiseCandidates() []netip.Addr {
	var out, loop []netip.Addr
	if ifs, err := sockaddr.GetPrivateInterfaces(); err == nil {
		for _, ifa := range ifs {
			if ip := sockaddr.ToIPAddr(ifa.SockAddr); ip != nil {
				if a, ok := netip.AddrFromSlice(*(*ip).NetIP()); ok {
					out = append(out, a.Unmap())
				}
			}
		}
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			if ip := p.Addr().Unmap(); ip.IsLoopback() {
				loop = append(loop, ip)
			} else {
				out = append(out, ip)
			}
		}
	}
	return append(out, loop...)
}
