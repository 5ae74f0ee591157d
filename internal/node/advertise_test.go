package node

import (
	"net"
	"net/netip"
	"slices"
	"testing"
)

func TestAdvertisable(t *testing.T) {
	ifaces := []netip.Addr{
		netip.MustParseAddr("127.0.0.1"),
		netip.MustParseAddr("::1"),
		netip.MustParseAddr("192.0.2.2"),
		netip.MustParseAddr("fd00::2"),
		netip.MustParseAddr("fe80::1"),
		netip.MustParseAddr("::ffff:198.51.100.7"),
	}
	tests := []struct {
		name   string
		bind   string
		ifaces []netip.Addr
		want   []string
	}{
		// The case: a node on 0.0.0.0 gave peers fd00::2.
		{name: "ipv4_wildcard", bind: "0.0.0.0:52417", ifaces: ifaces, want: []string{"192.0.2.2:52417", "198.51.100.7:52417"}},
		{name: "ipv6_wildcard_both", bind: "[::]:52417", ifaces: ifaces, want: []string{"192.0.2.2:52417", "[fd00::2]:52417", "198.51.100.7:52417"}},
		{name: "specific_address", bind: "192.0.2.2:52417", ifaces: ifaces, want: []string{"192.0.2.2:52417"}},
		{name: "ipv4_loopback_only", bind: "0.0.0.0:1", ifaces: ifaces[:2], want: []string{"127.0.0.1:1"}},
		{name: "ipv4_wildcard_on_ipv6_host", bind: "0.0.0.0:1", ifaces: []netip.Addr{netip.MustParseAddr("fd00::2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, a := range advertisable(netip.MustParseAddrPort(tt.bind), tt.ifaces) {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("advertisable(%s) = %v, want %v", tt.bind, got, tt.want)
			}
		})
	}
}

// TestBoundAddr: the family is the configured one, even where the socket
// is dual-stack and reports [::].
func TestBoundAddr(t *testing.T) {
	tests := []struct {
		configured string
		want       string // "" for the listener's own address
	}{
		{configured: "0.0.0.0:0", want: "0.0.0.0"},
		{configured: "127.0.0.1:0", want: "127.0.0.1"},
		{configured: "[::]:0", want: "::"},
		{configured: ":0"},
		{configured: "localhost:0"},
	}
	for _, tt := range tests {
		t.Run(tt.configured, func(t *testing.T) {
			ln, err := net.Listen("tcp", tt.configured)
			if err != nil {
				t.Skipf("cannot listen on %s here: %v", tt.configured, err)
			}
			defer ln.Close()
			actual := netip.MustParseAddrPort(ln.Addr().String())
			got := boundAddr(tt.configured, ln.Addr())
			want := actual
			if tt.want != "" {
				want = netip.AddrPortFrom(netip.MustParseAddr(tt.want), actual.Port())
			}
			if got != want {
				t.Errorf("boundAddr(%q, %s) = %s, want %s", tt.configured, ln.Addr(), got, want)
			}
		})
	}
}
