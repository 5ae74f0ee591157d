package membership_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/transport"
	"github.com/skulk/skulk/internal/platform/transport/clusterkey"
	"github.com/skulk/skulk/internal/testkit"
)

// wired is one node as the composition root will build it: a transport
// endpoint whose VerifyPeer is membership's, and membership meta that
// gossips the endpoint's key and address.
type wired struct {
	id ids.NodeID
	m  *membership.Membership
	ep *transport.Endpoint
}

func wire(t *testing.T, name string, gossipKey ed25519.PublicKey, join ...string) *wired {
	t.Helper()
	id := ids.NodeID(name)
	idn, err := transport.LoadIdentity(t.TempDir(), id)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := clusterkey.New("wired", clusterkey.NetworkVersion)
	w := &wired{id: id}
	w.ep, err = transport.Listen(transport.Config{
		Identity:   idn,
		ClusterKey: k,
		VerifyPeer: func(n ids.NodeID, key ed25519.PublicKey) error { return w.m.VerifyPeer(n, key) },
		ListenAddr: "127.0.0.1:0",
		Handlers:   map[string]transport.Handler{transport.ALPNControl: func(ctx context.Context, c *transport.Conn) { <-ctx.Done() }},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.ep.Close() })
	if gossipKey == nil {
		gossipKey = idn.PublicKey()
	}
	w.m, err = membership.New(membership.Config{
		ClusterKey:     k,
		Meta:           membership.Meta{Node: id, PublicKey: gossipKey, QUIC: []netip.AddrPort{netip.MustParseAddrPort(w.ep.Addr().String())}},
		BindAddr:       "127.0.0.1:0",
		BootstrapPeers: join,
		JoinInterval:   100 * time.Millisecond,
		Timing:         membership.Timing{ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 50 * time.Millisecond, GossipInterval: 20 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.m.Close() })
	return w
}

func dialMember(ctx context.Context, from *wired, to ids.NodeID) (*transport.Conn, error) {
	mb, ok := from.m.Member(to)
	if !ok {
		return nil, errors.New("not a member")
	}
	var addrs []string
	for _, a := range mb.Meta.QUIC {
		addrs = append(addrs, a.String())
	}
	return from.ep.Dial(ctx, to, addrs, transport.ALPNControl)
}

func TestTransportVerifiesGossipedKeys(t *testing.T) {
	testkit.NoLeaks(t)
	a := wire(t, "node-a", nil)
	b := wire(t, "node-b", nil, a.m.GossipAddr().String())
	impostor, _, _ := ed25519.GenerateKey(rand.Reader)
	c := wire(t, "node-c", impostor, a.m.GossipAddr().String()) // gossips a key its certificate lacks
	testkit.Eventually(t, 10*time.Second, "the three nodes to meet", func() bool {
		return len(a.m.Members()) == 3 && len(b.m.Members()) == 3 && len(c.m.Members()) == 3
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	conn, err := dialMember(ctx, a, "node-b")
	if err != nil {
		t.Fatal(err)
	}
	if conn.Peer() != "node-b" {
		t.Fatalf("connected to %s", conn.Peer())
	}
	// a dialling c: c's certificate key is not the key c gossiped.
	if _, err := dialMember(ctx, a, "node-c"); !errors.Is(err, transport.ErrPeerRejected) {
		t.Fatalf("a -> c: %v", err)
	}
	// c dialling b: b refuses c for the same reason, and c learns it.
	_, err = dialMember(ctx, c, "node-b")
	var re *transport.RefusedError
	if !errors.Is(err, transport.ErrPeerRejected) || !errors.As(err, &re) || !re.Remote {
		t.Fatalf("c -> b: %v", err)
	}
}
