package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/transport/clusterkey"
)

// The planes' ALPN protocols.
const (
	ALPNControl = "skulk/control/1"
	ALPNData    = "skulk/data/1"
	ALPNEdge    = "skulk/edge/1"
	// ALPNResponses carries lookups of stored Responses conversations, so
	// previous_response_id works through any node.
	ALPNResponses = "skulk/responses/1"
	// ALPNTensors carries byte ranges of installed models' tensors to a
	// member whose pipeline stage lacks the model (internal/models/tensorfetch).
	ALPNTensors = "skulk/tensors/1"
	// ALPNRaft carries the control plane's Raft messages
	// (internal/control/consensus).
	ALPNRaft = "skulk/raft/1"
)

// Defaults.
const (
	DefaultPort             = 52417
	DefaultPingInterval     = 5 * time.Second
	DefaultPingBudget       = 5 * time.Second // how long one ping may wait for its pong
	DefaultPingFailures     = 3               // consecutive misses before the connection closes
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultIdleTimeout      = 30 * time.Second
	// DefaultEdgeIdleTimeout bounds how long a pipeline's edge connection
	// (ALPNEdge) may stay silent: the dialing side keeps it alive with
	// PINGs every third of it, so silence means the path is cut, and the
	// links it carries (and the requests in flight on them) fail within it
	// instead of stalling until the node is declared lost.
	DefaultEdgeIdleTimeout = 3 * time.Second
	refusalLogEvery        = time.Minute // one log line per peer address and reason
)

// Handler serves one authenticated inbound connection. It runs on its own
// goroutine, owned by the endpoint; ctx is done when the connection closes
// (including at endpoint Close), and the handler must return then. The
// connection stays open when the handler returns early (for example after
// handing it to a driver that serves it on its own goroutines).
type Handler func(ctx context.Context, c *Conn)

// VerifyPeerFunc checks that key is the public key node gossiped; membership
// provides it. A non-nil error refuses the connection, and its text reaches
// the peer, so it must not carry a secret.
type VerifyPeerFunc func(node ids.NodeID, key ed25519.PublicKey) error

// Config configures an Endpoint.
type Config struct {
	Identity   *Identity      // required
	ClusterKey clusterkey.Key // required
	VerifyPeer VerifyPeerFunc // required
	// ListenAddr is the UDP address to bind, default ":52417". Use
	// "127.0.0.1:0" in tests.
	ListenAddr string
	// Handlers serve inbound connections per ALPN. An inbound connection on
	// an ALPN without a handler is refused with ErrNoHandler.
	Handlers map[string]Handler
	Logger   *slog.Logger // default: discard
	// OnRefusal, when set, is told (at the rate refusals are logged) of
	// each peer refused at the handshake, so the node can show it in its
	// diagnostics.
	OnRefusal func(addr, reason string)

	HandshakeTimeout time.Duration // TLS + cluster proof, per address
	IdleTimeout      time.Duration // QUIC idle timeout
	// EdgeIdleTimeout is the idle timeout of the edge connections this
	// endpoint dials (the peer adopts the smaller of the two), with
	// keep-alive PINGs every third of it.
	EdgeIdleTimeout time.Duration
	PingInterval    time.Duration // between successful health pings
	PingBudget      time.Duration // how long one ping waits for its pong
	PingFailures    int           // consecutive missed pings that close a connection
}

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if out.Identity == nil {
		return out, fmt.Errorf("%w: no identity", ErrBadConfig)
	}
	if !out.ClusterKey.Valid() {
		return out, fmt.Errorf("%w: no cluster key", ErrBadConfig)
	}
	if out.VerifyPeer == nil {
		return out, fmt.Errorf("%w: no VerifyPeer", ErrBadConfig)
	}
	if out.ListenAddr == "" {
		out.ListenAddr = fmt.Sprintf(":%d", DefaultPort)
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&out.HandshakeTimeout, DefaultHandshakeTimeout)
	def(&out.IdleTimeout, DefaultIdleTimeout)
	def(&out.EdgeIdleTimeout, DefaultEdgeIdleTimeout)
	def(&out.PingInterval, DefaultPingInterval)
	def(&out.PingBudget, DefaultPingBudget)
	if out.PingFailures <= 0 {
		out.PingFailures = DefaultPingFailures
	}
	return out, nil
}

type cacheKey struct {
	peer ids.NodeID
	alpn string
}

type cacheEntry struct {
	ready chan struct{} // closed when conn/err are set
	conn  *Conn
	err   error
}

// Endpoint is a node's QUIC endpoint.
type Endpoint struct {
	// immutable after Listen
	cfg       Config
	log       *slog.Logger
	proofKey  [32]byte
	udp       *net.UDPConn
	tr        *quic.Transport
	ln        *quic.Listener
	serverTLS *tls.Config
	quicConf  *quic.Config
	edgeConf  *quic.Config    // quicConf with the edge plane's idle bound and keep-alive
	life      context.Context // cancelled by Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup // every goroutine the endpoint starts

	mu      sync.Mutex
	closed  bool                     // guarded by mu
	cache   map[cacheKey]*cacheEntry // guarded by mu: outbound connections
	conns   map[*Conn]struct{}       // guarded by mu: every live connection
	refused map[string]time.Time     // guarded by mu: last refusal log per addr|reason
}

// Listen binds the endpoint's UDP socket and starts accepting connections.
func Listen(cfg Config) (*Endpoint, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ua, err := net.ResolveUDPAddr("udp", c.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen address %q: %w", c.ListenAddr, err)
	}
	udp, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	e := &Endpoint{
		cfg:      c,
		log:      c.Logger,
		proofKey: c.ClusterKey.Derive(clusterkey.PurposeTransport),
		udp:      udp,
		tr:       &quic.Transport{Conn: udp},
		quicConf: &quic.Config{
			HandshakeIdleTimeout: c.HandshakeTimeout,
			MaxIdleTimeout:       c.IdleTimeout,
			EnableDatagrams:      true,
		},
		cache:   map[cacheKey]*cacheEntry{},
		conns:   map[*Conn]struct{}{},
		refused: map[string]time.Time{},
	}
	protos := []string{ALPNControl, ALPNData, ALPNEdge}
	for p := range c.Handlers {
		if p != ALPNControl && p != ALPNData && p != ALPNEdge {
			protos = append(protos, p)
		}
	}
	sort.Strings(protos[3:])
	e.serverTLS = &tls.Config{
		MinVersion:            tls.VersionTLS13,
		Certificates:          []tls.Certificate{c.Identity.cert},
		ClientAuth:            tls.RequireAnyClientCert,
		NextProtos:            protos,
		VerifyPeerCertificate: verifyCertificate,
	}
	e.edgeConf = e.quicConf.Clone()
	e.edgeConf.MaxIdleTimeout = c.EdgeIdleTimeout
	e.edgeConf.KeepAlivePeriod = c.EdgeIdleTimeout / 3
	e.ln, err = e.tr.Listen(e.serverTLS, e.quicConf)
	if err != nil {
		udp.Close()
		return nil, fmt.Errorf("transport: %w", err)
	}
	e.life, e.cancel = context.WithCancel(context.Background())
	e.wg.Go(e.acceptLoop)
	return e, nil
}

func verifyCertificate(raw [][]byte, _ [][]*x509.Certificate) error {
	_, _, err := peerIdentity(raw)
	return err
}

func (e *Endpoint) clientTLS(alpn string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{e.cfg.Identity.cert},
		NextProtos:   []string{alpn},
		ServerName:   "skulk",
		// The chain is self-signed by design: verifyCertificate checks its
		// shape, the cluster proof and VerifyPeer authenticate the peer.
		InsecureSkipVerify:    true,
		VerifyPeerCertificate: verifyCertificate,
	}
}

// Addr returns the bound UDP address.
func (e *Endpoint) Addr() net.Addr { return e.udp.LocalAddr() }

func (e *Endpoint) acceptLoop() {
	for {
		qc, err := e.ln.Accept(e.life)
		if err != nil {
			return // listener closed
		}
		e.wg.Go(func() { e.serveInbound(qc) })
	}
}

func (e *Endpoint) serveInbound(qc *quic.Conn) {
	alpn := qc.ConnectionState().TLS.NegotiatedProtocol
	h := e.cfg.Handlers[alpn]
	if h == nil {
		qc.CloseWithError(CodeNoHandler, fmt.Sprintf("%v: %s", ErrNoHandler, alpn))
		e.logRefusal(&RefusedError{Addr: qc.RemoteAddr().String(), Reason: ErrNoHandler, Detail: alpn})
		return
	}
	ctx, cancel := context.WithTimeout(e.life, e.cfg.HandshakeTimeout)
	c, err := e.authenticate(ctx, qc, true, "")
	cancel()
	if err != nil {
		e.logRefusal(err)
		return
	}
	if !e.track(c) {
		return
	}
	h(c.Context(), c)
}

// track registers a live connection and starts its health goroutines. It
// returns false (and closes c) when the endpoint is closing.
func (e *Endpoint) track(c *Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		c.closeWith(ErrClosed, CodeShutdown, "endpoint closing")
		return false
	}
	e.conns[c] = struct{}{}
	e.wg.Go(func() { c.serveDatagrams() })
	e.wg.Go(func() {
		e.monitor(c)
		e.mu.Lock()
		delete(e.conns, c)
		e.mu.Unlock()
	})
	return true
}

// Dial returns the cached connection to peer on alpn, or dials one, trying
// addrs in order and keeping the first that authenticates. Concurrent Dials
// for the same peer and ALPN share one attempt. A dead cached connection is
// replaced.
func (e *Endpoint) Dial(ctx context.Context, peer ids.NodeID, addrs []string, alpn string) (*Conn, error) {
	key := cacheKey{peer, alpn}
	e.mu.Lock()
	for {
		if e.closed {
			e.mu.Unlock()
			return nil, ErrClosed
		}
		ent := e.cache[key]
		if ent == nil {
			break
		}
		select {
		case <-ent.ready:
			if ent.err == nil && ent.conn.alive() {
				e.mu.Unlock()
				return ent.conn, nil
			}
			delete(e.cache, key) // dead or failed: dial afresh
			continue
		default:
		}
		e.mu.Unlock()
		select {
		case <-ent.ready:
			if ent.err != nil {
				return nil, ent.err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		e.mu.Lock()
	}
	ent := &cacheEntry{ready: make(chan struct{})}
	e.cache[key] = ent
	e.mu.Unlock()

	ent.conn, ent.err = e.dialAddrs(ctx, peer, addrs, alpn)
	if ent.err != nil {
		e.mu.Lock()
		if e.cache[key] == ent {
			delete(e.cache, key)
		}
		e.mu.Unlock()
	}
	close(ent.ready)
	return ent.conn, ent.err
}

func (e *Endpoint) dialAddrs(ctx context.Context, peer ids.NodeID, addrs []string, alpn string) (*Conn, error) {
	de := &DialError{Peer: peer, ALPN: alpn}
	for _, addr := range addrs {
		c, err := e.dialOne(ctx, peer, addr, alpn)
		if err == nil {
			if !e.track(c) {
				return nil, ErrClosed
			}
			return c, nil
		}
		e.logRefusal(err)
		de.Attempts = append(de.Attempts, AddrError{Addr: addr, Err: err})
		if ctx.Err() != nil || e.life.Err() != nil {
			break
		}
	}
	return nil, de
}

func (e *Endpoint) dialOne(ctx context.Context, peer ids.NodeID, addr, alpn string) (*Conn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.HandshakeTimeout)
	defer cancel()
	stop := context.AfterFunc(e.life, cancel)
	defer stop()
	conf := e.quicConf
	if alpn == ALPNEdge {
		conf = e.edgeConf
	}
	qc, err := e.tr.Dial(ctx, ua, e.clientTLS(alpn), conf)
	if err != nil {
		if re := remoteRefusal(err); re != nil {
			re.Addr, re.Peer = addr, peer
			return nil, re
		}
		return nil, err
	}
	return e.authenticate(ctx, qc, false, peer)
}

// logRefusal logs an authentication refusal once per address and reason
// per refusalLogEvery.
func (e *Endpoint) logRefusal(err error) {
	var re *RefusedError
	if !errors.As(err, &re) {
		return
	}
	host, _, splitErr := net.SplitHostPort(re.Addr)
	if splitErr != nil {
		host = re.Addr
	}
	k := host + "|" + re.Reason.Error()
	now := time.Now()
	e.mu.Lock()
	last, seen := e.refused[k]
	if !seen || now.Sub(last) >= refusalLogEvery {
		e.refused[k] = now
	}
	if len(e.refused) > 1024 {
		for k, t := range e.refused {
			if now.Sub(t) >= refusalLogEvery {
				delete(e.refused, k)
			}
		}
	}
	e.mu.Unlock()
	if seen && now.Sub(last) < refusalLogEvery {
		return
	}
	e.log.Warn(re.Error(), "peer_addr", re.Addr, "node", string(re.Peer), "remote", re.Remote, "reason", re.Reason.Error())
	if e.cfg.OnRefusal != nil {
		e.cfg.OnRefusal(re.Addr, "QUIC: "+re.Reason.Error())
	}
}

// Close closes every connection (the peers see CodeShutdown), stops
// accepting, and waits for every goroutine the endpoint started, handlers
// included.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	conns := make([]*Conn, 0, len(e.conns))
	for c := range e.conns {
		conns = append(conns, c)
	}
	e.mu.Unlock()
	e.cancel()
	e.ln.Close()
	for _, c := range conns {
		c.closeWith(ErrClosed, CodeShutdown, "endpoint closing")
	}
	e.wg.Wait()
	err := e.tr.Close()
	if uerr := e.udp.Close(); err == nil && !errors.Is(uerr, net.ErrClosed) {
		err = uerr
	}
	return err
}
