package membership

import (
	"net"
	"net/netip"
)

// Advertised lists the addresses other nodes can reach a listener bound to
// bind on (see Advertisable), from this machine's interface addresses.
func Advertised(bind netip.AddrPort) []netip.AddrPort {
	var ifaces []netip.Addr
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if pfx, err := netip.ParsePrefix(a.String()); err == nil {
			ifaces = append(ifaces, pfx.Addr())
		}
	}
	return Advertisable(bind, ifaces)
}

// Advertisable lists the addresses other nodes can reach a listener bound
// to bind on: the bound address itself, or when bound to all interfaces
// every interface address of the bind's family (Reachable:
// 0.0.0.0 is IPv4 only, :: both), loopback only when there is no other.
func Advertisable(bind netip.AddrPort, ifaces []netip.Addr) []netip.AddrPort {
	if !bind.Addr().IsUnspecified() {
		return []netip.AddrPort{bind}
	}
	var out, loop []netip.AddrPort
	for _, ip := range ifaces {
		ip = ip.Unmap()
		if ip.IsLinkLocalUnicast() || ip.IsMulticast() || !SameFamily(bind.Addr(), ip) {
			continue
		}
		ap := netip.AddrPortFrom(ip, bind.Port())
		if ip.IsLoopback() {
			loop = append(loop, ap)
		} else {
			out = append(out, ap)
		}
	}
	if len(out) == 0 {
		return loop
	}
	return out
}
