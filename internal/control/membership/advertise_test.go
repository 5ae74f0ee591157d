package membership

import (
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
			for _, a := range Advertisable(netip.MustParseAddrPort(tt.bind), tt.ifaces) {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Advertisable(%s) = %v, want %v", tt.bind, got, tt.want)
			}
		})
	}
}
