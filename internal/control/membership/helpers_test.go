package membership

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/transport/clusterkey"
)

// fastTiming shortens SWIM for tests (nomad's TestServer does the same).
var fastTiming = Timing{
	ProbeInterval:    100 * time.Millisecond,
	ProbeTimeout:     50 * time.Millisecond,
	SuspicionMult:    2,
	GossipInterval:   20 * time.Millisecond,
	PushPullInterval: 500 * time.Millisecond,
	TCPTimeout:       time.Second,
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) lines(subs ...string) []string {
	l.mu.Lock()
	s := l.b.String()
	l.mu.Unlock()
	var out []string
	for _, ln := range strings.Split(s, "\n") {
		ok := ln != ""
		for _, sub := range subs {
			ok = ok && strings.Contains(ln, sub)
		}
		if ok {
			out = append(out, ln)
		}
	}
	return out
}

// tnode is one membership under test with an owner that records its events.
type tnode struct {
	m    *Membership
	meta Meta
	log  *logBuf

	mu     sync.Mutex
	events []Event
	done   chan struct{}
}

func (n *tnode) addr() string { return n.m.GossipAddr().String() }

func (n *tnode) seen(kind EventKind, node ids.NodeID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range n.events {
		if e.Kind == kind && e.Node == node {
			return true
		}
	}
	return false
}

type opt func(*Config)

func key(secret, nv string) opt {
	return func(c *Config) {
		k, err := clusterkey.New(secret, nv)
		if err != nil {
			panic(err)
		}
		c.ClusterKey = k
		c.Meta.NetworkVersion = nv
	}
}

func bootstrap(addrs ...string) opt { return func(c *Config) { c.BootstrapPeers = addrs } }

func telemetryKeys(n int) opt { return func(c *Config) { c.TelemetryKeys = n } }

func testMeta(name string) Meta {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	return Meta{
		Node:            ids.NodeID(name),
		SoftwareVersion: "0.1.0-test",
		Commit:          "0123456789abcdef0123456789abcdef01234567",
		PublicKey:       pub,
		API:             []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:52415"), netip.MustParseAddrPort("[fe80::1]:52415")},
		QUIC:            []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:52417")},
	}
}

func startNode(t *testing.T, name string, opts ...opt) *tnode {
	t.Helper()
	k, _ := clusterkey.New("test-cluster", clusterkey.NetworkVersion)
	lb := &logBuf{}
	cfg := Config{
		ClusterKey:   k,
		Meta:         testMeta(name),
		BindAddr:     "127.0.0.1:0",
		JoinInterval: 100 * time.Millisecond,
		Timing:       fastTiming,
		Logger:       slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := &tnode{m: m, meta: cfg.Meta, log: lb, done: make(chan struct{})}
	go func() { // the events owner; ends when Close closes Events
		defer close(n.done)
		for e := range m.Events() {
			n.mu.Lock()
			n.events = append(n.events, e)
			n.mu.Unlock()
		}
	}()
	t.Cleanup(func() { n.stop(t) })
	return n
}

// stop closes the membership (idempotent) and waits for the events owner.
func (n *tnode) stop(t *testing.T) {
	t.Helper()
	n.m.Close()
	select {
	case <-n.done:
	case <-time.After(5 * time.Second):
		t.Error("events channel not closed by Close")
	}
}

// noticed reports whether this node holds node's leave notice.
func (n *tnode) noticed(node ids.NodeID) bool {
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	return n.m.leaving[node]
}

func memberIDs(m *Membership) []ids.NodeID {
	var out []ids.NodeID
	for _, mb := range m.Members() {
		out = append(out, mb.Node)
	}
	return out
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
