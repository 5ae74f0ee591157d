//go:build linux

package dataplane

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

// quicConn backs PeerConn with real quic-go, as the transport package will.
type quicConn struct{ c *quic.Conn }

func (q quicConn) OpenUniStream(ctx context.Context) (SendStream, error) {
	s, err := q.c.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return quicSend{s}, nil
}

func (q quicConn) AcceptUniStream(ctx context.Context) (RecvStream, error) {
	s, err := q.c.AcceptUniStream(ctx)
	if err != nil {
		return nil, err
	}
	return quicRecv{s}, nil
}

type quicSend struct{ *quic.SendStream }

func (s quicSend) Abort() { s.CancelWrite(0) }

type quicRecv struct{ *quic.ReceiveStream }

func (s quicRecv) Abort() { s.CancelRead(0) }

// testNode is one node's edge endpoint on loopback: a QUIC listener with its
// own self-signed certificate, mutual TLS pinned to the peers' certificates,
// and a Driver serving every accepted connection.
type testNode struct {
	id     NodeID
	cert   tls.Certificate
	ln     *quic.Listener
	driver *Driver
	events chan DriverEvent
	dials  atomic.Int32
}

func selfSigned(t testing.TB, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// pinTo accepts exactly the given peer certificates, as peer auth against
// gossiped public keys will.
func pinTo(peers *sync.Map) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("no peer certificate")
		}
		ok := false
		peers.Range(func(_, v any) bool {
			if bytes.Equal(v.([]byte), raw[0]) {
				ok = true
				return false
			}
			return true
		})
		if !ok {
			return errors.New("unknown peer certificate")
		}
		return nil
	}
}

// quicConfig keeps flow-control windows fixed so backpressure bounds are
// predictable.
func quicConfig(window uint64) *quic.Config {
	return &quic.Config{
		InitialStreamReceiveWindow:     window,
		MaxStreamReceiveWindow:         window,
		InitialConnectionReceiveWindow: 2 * window,
		MaxConnectionReceiveWindow:     2 * window,
		MaxIncomingUniStreams:          64,
		KeepAlivePeriod:                time.Second,
	}
}

// newTestNodes starts n nodes that trust each other.
func newTestNodes(t testing.TB, n int, window uint64) []*testNode {
	t.Helper()
	var trusted sync.Map
	addrs := map[NodeID]string{}
	nodes := make([]*testNode, n)
	for i := range nodes {
		id := NodeID("node-" + string(rune('a'+i)))
		cert := selfSigned(t, string(id))
		trusted.Store(id, cert.Certificate[0])
		nodes[i] = &testNode{id: id, cert: cert, events: make(chan DriverEvent, 1024)}
	}
	for _, nd := range nodes {
		srvTLS := &tls.Config{
			Certificates:          []tls.Certificate{nd.cert},
			NextProtos:            []string{EdgeALPN},
			ClientAuth:            tls.RequireAnyClientCert,
			VerifyPeerCertificate: pinTo(&trusted),
			MinVersion:            tls.VersionTLS13,
		}
		ln, err := quic.ListenAddr("127.0.0.1:0", srvTLS, quicConfig(window))
		if err != nil {
			t.Fatal(err)
		}
		nd.ln = ln
		addrs[nd.id] = ln.Addr().String()
	}
	for _, nd := range nodes {
		cliTLS := &tls.Config{
			Certificates:          []tls.Certificate{nd.cert},
			NextProtos:            []string{EdgeALPN},
			InsecureSkipVerify:    true, // replaced by pinning below
			VerifyPeerCertificate: pinTo(&trusted),
			MinVersion:            tls.VersionTLS13,
		}
		nd.driver = NewDriver(DriverConfig{
			Identity: Identity{Run: "run-1", Node: nd.id},
			Dial: func(ctx context.Context, peer NodeID) (PeerConn, error) {
				nd.dials.Add(1)
				c, err := quic.DialAddr(ctx, addrs[peer], cliTLS, quicConfig(window))
				if err != nil {
					return nil, err
				}
				if p := c.ConnectionState().TLS.NegotiatedProtocol; p != EdgeALPN {
					return nil, errors.New("negotiated ALPN " + p)
				}
				return quicConn{c}, nil
			},
			OnEvent: func(ev DriverEvent) {
				select {
				case nd.events <- ev:
				default:
				}
			},
		})
		var wg sync.WaitGroup
		ctx, cancel := context.WithCancel(context.Background())
		wg.Go(func() {
			for {
				c, err := nd.ln.Accept(ctx)
				if err != nil {
					return
				}
				nd.driver.Serve(quicConn{c})
			}
		})
		t.Cleanup(func() {
			cancel()
			nd.driver.Close()
			nd.ln.Close()
			wg.Wait()
		})
	}
	return nodes
}

// waitEvent returns the first event of kind for edge, failing after 20 s.
func (nd *testNode) waitEvent(t testing.TB, kind DriverEventKind, edge EdgeID) DriverEvent {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-nd.events:
			if ev.Kind == kind && ev.Edge == edge {
				return ev
			}
		case <-timeout:
			t.Fatalf("%s: no event %d for edge %d", nd.id, kind, edge)
		}
	}
}
