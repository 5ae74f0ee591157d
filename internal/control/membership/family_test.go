package membership

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func addrs(t *testing.T, ss ...string) []netip.Addr {
	t.Helper()
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestReachable(t *testing.T) {
	peers := []netip.AddrPort{
		netip.MustParseAddrPort("192.0.2.1:52416"),
		netip.MustParseAddrPort("[fd00::1]:52416"),
		netip.MustParseAddrPort("[::ffff:198.51.100.7]:52416"), // IPv4, mapped
		netip.MustParseAddrPort("[2001:db8::9]:52416"),
	}
	tests := []struct {
		name  string
		local string // "" for an invalid address (a name)
		want  []int  // indexes into peers
	}{
		{name: "ipv4_wildcard", local: "0.0.0.0", want: []int{0, 2}},
		{name: "ipv4_address", local: "192.0.2.5", want: []int{0, 2}},
		{name: "ipv4_mapped_bind", local: "::ffff:192.0.2.5", want: []int{0, 2}},
		{name: "ipv6_address", local: "fd00::5", want: []int{1, 3}},
		{name: "ipv6_loopback", local: "::1", want: []int{1, 3}},
		{name: "ipv6_wildcard_dual_stack", local: "::", want: []int{0, 1, 2, 3}},
		{name: "unknown_bind", local: "", want: []int{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var local netip.Addr
			if tt.local != "" {
				local = netip.MustParseAddr(tt.local)
			}
			var want []netip.AddrPort
			for _, i := range tt.want {
				want = append(want, peers[i])
			}
			if got := Reachable(local, peers); !slices.Equal(got, want) {
				t.Errorf("Reachable(%v) = %v, want %v", local, got, want)
			}
		})
	}
}

func TestPickAdvertise(t *testing.T) {
	tests := []struct {
		name       string
		bind       string
		candidates []netip.Addr
		want       string // "" for none
	}{
		// The case of the issue: a private IPv6 address ranks first (a
		// public IPv4 one is not private), yet 0.0.0.0 means IPv4.
		{name: "ipv4_bind_skips_ipv6", bind: "0.0.0.0", candidates: addrs(t, "fd00::2", "203.0.113.4", "127.0.0.1"), want: "203.0.113.4"},
		{name: "ipv4_first_kept", bind: "0.0.0.0", candidates: addrs(t, "10.0.0.2", "192.168.1.9"), want: "10.0.0.2"},
		{name: "ipv4_bind_loopback_last", bind: "0.0.0.0", candidates: addrs(t, "fd00::2", "127.0.0.1"), want: "127.0.0.1"},
		{name: "ipv4_bind_none", bind: "0.0.0.0", candidates: addrs(t, "fd00::2", "::1")},
		{name: "skips_unusable", bind: "0.0.0.0", candidates: addrs(t, "169.254.1.1", "224.0.0.1", "0.0.0.0", "10.1.1.1"), want: "10.1.1.1"},
		{name: "ipv6_wildcard_takes_first", bind: "::", candidates: addrs(t, "fe80::1", "fd00::2", "10.0.0.2"), want: "fd00::2"},
		{name: "mapped_candidate_unmapped", bind: "0.0.0.0", candidates: addrs(t, "::ffff:10.0.0.3"), want: "10.0.0.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := pickAdvertise(netip.MustParseAddr(tt.bind), tt.candidates)
			if want := tt.want; ok != (want != "") || (ok && got != netip.MustParseAddr(want)) {
				t.Errorf("pickAdvertise(%s, %v) = %v, %v; want %q", tt.bind, tt.candidates, got, ok, want)
			}
		})
	}
}

// TestGossipKeepsToTheBindFamily: a node gossiping on IPv4 advertises an
// IPv4 address and does not try to join an IPv6 one, which it says once.
func TestGossipKeepsToTheBindFamily(t *testing.T) {
	n := startNode(t, "node-a", func(c *Config) { c.BindAddr = "0.0.0.0:0" }, bootstrap("[fd00::1]:52416", "127.0.0.1:1"))
	if ga := n.m.GossipAddr(); !ga.Addr().Is4() || ga.Addr().IsUnspecified() {
		t.Fatalf("gossip address %v, want a concrete IPv4 address", ga)
	}
	_, err := n.m.Join(t.Context(), []string{"[fd00::1]:52416"})
	var je *JoinError
	if !errors.As(err, &je) || !errors.Is(je.Failed["[fd00::1]:52416"], ErrOtherFamily) {
		t.Fatalf("joining an IPv6 address from 0.0.0.0: %v, want %v", err, ErrOtherFamily)
	}
	if got := n.log.lines("level=WARN", "other IP family", "[fd00::1]:52416"); len(got) != 1 {
		t.Errorf("warnings of the IPv6 bootstrap peer: %q, want one", got)
	}
	if got := n.log.lines("level=WARN", "other IP family", "127.0.0.1:1"); len(got) != 0 {
		t.Errorf("the IPv4 bootstrap peer was warned of: %q", got)
	}
}
