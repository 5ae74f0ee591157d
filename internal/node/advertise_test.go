package node

import (
	"net"
	"net/netip"
	"testing"
)

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
