package transport

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/transport/clusterkey"
)

// logBuf captures one endpoint's log lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lines returns the captured lines that contain every one of subs.
func (l *logBuf) lines(subs ...string) []string {
	var out []string
	for _, ln := range strings.Split(l.String(), "\n") {
		ok := ln != ""
		for _, s := range subs {
			ok = ok && strings.Contains(ln, s)
		}
		if ok {
			out = append(out, ln)
		}
	}
	return out
}

// registry plays membership's part: the public keys nodes gossiped.
type registry struct {
	mu   sync.Mutex
	keys map[ids.NodeID]ed25519.PublicKey
}

func newRegistry() *registry { return &registry{keys: map[ids.NodeID]ed25519.PublicKey{}} }

func (r *registry) set(n ids.NodeID, k ed25519.PublicKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys[n] = k
}

func (r *registry) verify(n ids.NodeID, k ed25519.PublicKey) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	want, ok := r.keys[n]
	if !ok {
		return fmt.Errorf("node %s is not a member", n)
	}
	if !want.Equal(k) {
		return fmt.Errorf("node %s presented a key that differs from its gossiped key", n)
	}
	return nil
}

type node struct {
	id  ids.NodeID
	idn *Identity
	ep  *Endpoint
	log *logBuf
}

func (n *node) addr() string { return n.ep.Addr().String() }

type nodeOpt func(*Config)

func withKey(secret, nv string) nodeOpt {
	return func(c *Config) {
		k, err := clusterkey.New(secret, nv)
		if err != nil {
			panic(err)
		}
		c.ClusterKey = k
	}
}

func withHandler(alpn string, h Handler) nodeOpt {
	return func(c *Config) {
		if c.Handlers == nil {
			c.Handlers = map[string]Handler{}
		}
		c.Handlers[alpn] = h
	}
}

func withHealth(interval, budget time.Duration, failures int) nodeOpt {
	return func(c *Config) { c.PingInterval, c.PingBudget, c.PingFailures = interval, budget, failures }
}

// newNode starts an endpoint on loopback whose VerifyPeer consults reg, and
// registers its own key in reg.
func newNode(t *testing.T, name string, reg *registry, opts ...nodeOpt) *node {
	t.Helper()
	id := ids.NodeID(name)
	idn, err := LoadIdentity(t.TempDir(), id)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := clusterkey.New("test-cluster", clusterkey.NetworkVersion)
	lb := &logBuf{}
	cfg := Config{
		Identity:   idn,
		ClusterKey: k,
		VerifyPeer: reg.verify,
		ListenAddr: "127.0.0.1:0",
		Logger:     slog.New(slog.NewTextHandler(lb, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	ep, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ep.Close(); err != nil {
			t.Errorf("close %s: %v", name, err)
		}
	})
	reg.set(id, idn.PublicKey())
	return &node{id: id, idn: idn, ep: ep, log: lb}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
