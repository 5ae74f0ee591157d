package transport

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/transport/clusterkey"
	"github.com/skulk/skulk/internal/testkit"
)

// echo serves bidirectional streams on a connection: each stream's bytes
// come back on the same stream.
func echo(seen chan<- *Conn) Handler {
	return func(ctx context.Context, c *Conn) {
		if seen != nil {
			seen <- c
		}
		for {
			s, err := c.AcceptStream(ctx)
			if err != nil {
				return
			}
			go func() { // ends with the stream; the connection close ends it too
				io.Copy(s, s)
				s.Close()
			}()
		}
	}
}

func roundTrip(t *testing.T, c *Conn, msg string) {
	t.Helper()
	s, err := c.OpenStream(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	got, err := io.ReadAll(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != msg {
		t.Fatalf("echo = %q, want %q", got, msg)
	}
}

func TestMutualAuthAndALPNDispatch(t *testing.T) {
	testkit.NoLeaks(t)
	reg := newRegistry()
	controlConns := make(chan *Conn, 1)
	edgeConns := make(chan *Conn, 1)
	a := newNode(t, "node-a", reg)
	b := newNode(t, "node-b", reg,
		withHandler(ALPNControl, echo(controlConns)),
		withHandler(ALPNEdge, func(ctx context.Context, c *Conn) { edgeConns <- c }))

	c, err := a.ep.Dial(ctxT(t), b.id, []string{b.addr()}, ALPNControl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Peer() != b.id || !c.PublicKey().Equal(b.idn.PublicKey()) || c.ALPN() != ALPNControl || c.Inbound() {
		t.Fatalf("dialled conn: peer %s alpn %s inbound %v", c.Peer(), c.ALPN(), c.Inbound())
	}
	roundTrip(t, c, "hello control")
	in := <-controlConns
	if in.Peer() != a.id || !in.PublicKey().Equal(a.idn.PublicKey()) || !in.Inbound() || in.ALPN() != ALPNControl {
		t.Fatalf("inbound conn: peer %s alpn %s inbound %v", in.Peer(), in.ALPN(), in.Inbound())
	}

	e, err := a.ep.Dial(ctxT(t), b.id, []string{b.addr()}, ALPNEdge)
	if err != nil {
		t.Fatal(err)
	}
	if e == c {
		t.Fatal("edge and control share a connection")
	}
	if in := <-edgeConns; in.ALPN() != ALPNEdge || in.Peer() != a.id {
		t.Fatalf("edge handler got alpn %s from %s", in.ALPN(), in.Peer())
	}
	select {
	case c := <-controlConns:
		t.Fatalf("control handler got the edge connection (%s)", c.ALPN())
	default:
	}

	// No data handler on b: refused, and a learns why.
	_, err = a.ep.Dial(ctxT(t), b.id, []string{b.addr()}, ALPNData)
	var re *RefusedError
	if !errors.Is(err, ErrNoHandler) || !errors.As(err, &re) || !re.Remote {
		t.Fatalf("dial without a handler: %v", err)
	}
}

func TestDialTriesAddressesInOrder(t *testing.T) {
	testkit.NoLeaks(t)
	reg := newRegistry()
	a := newNode(t, "node-a", reg)
	b := newNode(t, "node-b", reg, withHandler(ALPNControl, echo(nil)))
	other := newNode(t, "node-c", reg, withHandler(ALPNControl, echo(nil)))
	// The first address answers as another node, the second does not parse,
	// the third is b.
	c, err := a.ep.Dial(ctxT(t), b.id, []string{other.addr(), "not an address", b.addr()}, ALPNControl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Peer() != b.id || c.RemoteAddr().String() != b.addr() {
		t.Fatalf("connected to %s at %s", c.Peer(), c.RemoteAddr())
	}
	roundTrip(t, c, "third time lucky")

	_, err = a.ep.Dial(ctxT(t), "node-d", []string{other.addr()}, ALPNControl)
	var de *DialError
	if !errors.As(err, &de) || len(de.Attempts) != 1 || !errors.Is(err, ErrPeerRejected) {
		t.Fatalf("dial of the wrong node: %v", err)
	}
}

func TestConnectionReuseAndRedial(t *testing.T) {
	testkit.NoLeaks(t)
	reg := newRegistry()
	accepted := make(chan *Conn, 16)
	a := newNode(t, "node-a", reg)
	b := newNode(t, "node-b", reg, withHandler(ALPNControl, echo(accepted)))
	addrs := []string{b.addr()}

	var wg sync.WaitGroup
	conns := make([]*Conn, 8)
	for i := range conns {
		wg.Go(func() {
			c, err := a.ep.Dial(ctxT(t), b.id, addrs, ALPNControl)
			if err != nil {
				t.Error(err)
			}
			conns[i] = c
		})
	}
	wg.Wait()
	for _, c := range conns[1:] {
		if c != conns[0] {
			t.Fatal("concurrent dials made more than one connection")
		}
	}
	again, _ := a.ep.Dial(ctxT(t), b.id, addrs, ALPNControl)
	if again != conns[0] {
		t.Fatal("a second dial did not reuse the connection")
	}
	roundTrip(t, again, "one")
	if n := len(accepted); n != 1 {
		t.Fatalf("b accepted %d connections, want 1", n)
	}

	// The peer closes it: the next dial redials.
	(<-accepted).Close()
	testkit.Eventually(t, 5*time.Second, "the cached connection to close", func() bool { return conns[0].Err() != nil })
	fresh, err := a.ep.Dial(ctxT(t), b.id, addrs, ALPNControl)
	if err != nil {
		t.Fatal(err)
	}
	if fresh == conns[0] {
		t.Fatal("dial returned the dead connection")
	}
	roundTrip(t, fresh, "two")
}

func TestGossipedKeyMismatchIsRefused(t *testing.T) {
	testkit.NoLeaks(t)
	reg := newRegistry()
	a := newNode(t, "node-a", reg)
	b := newNode(t, "node-b", reg, withHandler(ALPNControl, echo(nil)))
	// Membership on b holds a different key for node-a than a's certificate.
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	reg.set(a.id, other)

	_, err := a.ep.Dial(ctxT(t), b.id, []string{b.addr()}, ALPNControl)
	var re *RefusedError
	if !errors.Is(err, ErrPeerRejected) || !errors.As(err, &re) || !re.Remote {
		t.Fatalf("a's dial: %v", err)
	}
	testkit.Eventually(t, 5*time.Second, "b to log the refusal", func() bool {
		return len(b.log.lines("refused peer", "node-a", "differs from its gossiped key")) == 1
	})
	if got := a.log.lines("refused by peer", "differs from its gossiped key"); len(got) != 1 {
		t.Fatalf("a logged %d refusal lines: %q", len(got), a.log.String())
	}

	// And the dialler checks the listener: b's gossiped key differs.
	reg.set(a.id, a.idn.PublicKey())
	reg.set(b.id, other)
	_, err = a.ep.Dial(ctxT(t), b.id, []string{b.addr()}, ALPNControl)
	if !errors.Is(err, ErrPeerRejected) || !errors.As(err, &re) || re.Remote || re.Peer != b.id {
		t.Fatalf("a's dial of an impostor b: %v", err)
	}
}

func TestOtherClusterKeyIsRefused(t *testing.T) {
	testkit.NoLeaks(t)
	reg := newRegistry()
	a := newNode(t, "node-a", reg, withKey("cluster-one", clusterkey.NetworkVersion))
	b := newNode(t, "node-b", reg, withKey("cluster-two", clusterkey.NetworkVersion), withHandler(ALPNControl, echo(nil)))
	accepted := make(chan *Conn, 1)
	c := newNode(t, "node-c", reg, withKey("cluster-one", clusterkey.NetworkVersion), withHandler(ALPNControl, echo(accepted)))

	_, err := a.ep.Dial(ctxT(t), b.id, []string{b.addr()}, ALPNControl)
	var re *RefusedError
	if !errors.Is(err, ErrClusterMismatch) || !errors.As(err, &re) || !re.Remote {
		t.Fatalf("dial across cluster keys: %v", err)
	}
	testkit.Eventually(t, 5*time.Second, "b to log", func() bool { return len(b.log.lines("refused peer", "different cluster key")) == 1 })
	if got := a.log.lines("refused by peer", "different cluster key"); len(got) != 1 {
		t.Fatalf("a's log: %q", a.log.String())
	}
	// b refused before VerifyPeer: the reason is the key, not membership.
	if got := b.log.lines("not a member"); len(got) != 0 {
		t.Fatalf("b ran VerifyPeer for a foreign cluster: %q", got)
	}
	// A second attempt is refused again but not logged again. b logs after
	// it refused, so close b: Close waits for its connection goroutines,
	// and whatever b would log about the attempt is in its log by then.
	a.ep.Dial(ctxT(t), b.id, []string{b.addr()}, ALPNControl)
	if err := b.ep.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(b.log.lines("different cluster key")); n != 1 {
		t.Fatalf("b logged the refusal %d times", n)
	}
	// Same key works: the refusal is about the key.
	if _, err := a.ep.Dial(ctxT(t), c.id, []string{c.addr()}, ALPNControl); err != nil {
		t.Fatal(err)
	}
}

func TestOtherNetworkVersionIsRefused(t *testing.T) {
	testkit.NoLeaks(t)
	reg := newRegistry()
	a := newNode(t, "node-a", reg, withKey("k", "skulk-net-1"))
	b := newNode(t, "node-b", reg, withKey("k", "skulk-net-2"), withHandler(ALPNControl, echo(nil)))
	_, err := a.ep.Dial(ctxT(t), b.id, []string{b.addr()}, ALPNControl)
	var re *RefusedError
	if !errors.Is(err, ErrNetworkVersion) || !errors.As(err, &re) || !re.Remote {
		t.Fatalf("dial across network versions: %v", err)
	}
	testkit.Eventually(t, 5*time.Second, "b to log", func() bool {
		return len(b.log.lines("refused peer", "different network version", `peer speaks \"skulk-net-1\"`)) == 1
	})
	if got := a.log.lines("refused by peer", "different network version"); len(got) != 1 {
		t.Fatalf("a's log: %q", a.log.String())
	}
}

func TestHealthClosesDeadConnection(t *testing.T) {
	testkit.NoLeaks(t)
	const interval, budget = 30 * time.Millisecond, 100 * time.Millisecond
	reg := newRegistry()
	a := newNode(t, "node-a", reg, withHealth(interval, budget, 3))
	b := newNode(t, "node-b", reg, withHealth(interval, budget, 3), withHandler(ALPNControl, echo(nil)))
	c, err := a.ep.Dial(ctxT(t), b.id, []string{b.addr()}, ALPNControl)
	if err != nil {
		t.Fatal(err)
	}
	// Alive: pings are answered, so many intervals pass without a close.
	testkit.Eventually(t, 5*time.Second, "ten answered pings", func() bool { return c.answered.Load() >= 10 || c.Err() != nil })
	if err := c.Err(); err != nil {
		t.Fatalf("healthy connection closed after %d answered pings: %v", c.answered.Load(), err)
	}
	roundTrip(t, c, "still here")

	// b vanishes without a word: its socket closes under quic-go, so no
	// CONNECTION_CLOSE is sent and only a's pings can notice.
	dead := time.Now()
	b.ep.udp.Close()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("dead connection not closed")
	}
	took := time.Since(dead)
	if !errors.Is(c.Err(), ErrUnhealthy) {
		t.Fatalf("closed with %v, want ErrUnhealthy", c.Err())
	}
	if took < 3*budget-interval { // three budgets, less the interval that may have been running
		t.Fatalf("closed after %v, before three pings could fail", took)
	}
	if got := a.log.lines("unhealthy", "failed_pings=3"); len(got) != 1 {
		t.Fatalf("a's log: %q", a.log.String())
	}
}

func TestIdentityIsPersistedPrivately(t *testing.T) {
	home := t.TempDir()
	i1, err := LoadIdentity(home, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, KeyFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", st.Mode().Perm())
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	i2, err := LoadIdentity(home, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	if !i1.PublicKey().Equal(i2.PublicKey()) {
		t.Fatal("the key changed across loads")
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("a widened key file stayed %v", st.Mode().Perm())
	}
	other, _ := LoadIdentity(t.TempDir(), "node-a")
	if other.PublicKey().Equal(i1.PublicKey()) {
		t.Fatal("two homes share a key")
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentity(home, "node-a"); err == nil {
		t.Fatal("a corrupt key file loaded")
	}
	if _, err := LoadIdentity(t.TempDir(), ids.NodeID("")); err == nil {
		t.Fatal("an empty node id loaded")
	}
}

func TestCloseStopsHandlersAndGoroutines(t *testing.T) {
	testkit.NoLeaks(t) // the endpoints' goroutines stop, handlers included
	reg := newRegistry()
	entered := make(chan struct{})
	a := newNode(t, "node-a", reg)
	b := newNode(t, "node-b", reg, withHandler(ALPNControl, func(ctx context.Context, c *Conn) {
		close(entered)
		<-ctx.Done() // blocks until the connection or endpoint closes
	}))
	c, err := a.ep.Dial(ctxT(t), b.id, []string{b.addr()}, ALPNControl)
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	if err := b.ep.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a did not see b's shutdown")
	}
	var re *RefusedError
	if errors.As(c.Err(), &re) {
		t.Fatalf("shutdown reported as a refusal: %v", c.Err())
	}
	if _, err := b.ep.Dial(ctxT(t), a.id, []string{a.addr()}, ALPNControl); !errors.Is(err, ErrClosed) {
		t.Fatalf("dial on a closed endpoint: %v", err)
	}
	a.ep.Close()
}

func TestRefusedErrorText(t *testing.T) {
	e := &RefusedError{Addr: "10.0.0.1:52417", Peer: "node-b", Remote: true, Reason: ErrClusterMismatch, Detail: "cluster proof does not verify"}
	want := "transport: refused by peer 10.0.0.1:52417 (node node-b): different cluster key: cluster proof does not verify"
	if e.Error() != want {
		t.Fatalf("%q\nwant %q", e.Error(), want)
	}
	if !bytes.Contains([]byte(e.Error()), []byte("different cluster key")) || !errors.Is(e, ErrClusterMismatch) {
		t.Fatal("reason not matched")
	}
}
