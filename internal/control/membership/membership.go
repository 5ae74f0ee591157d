package membership

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/mdns"
	"github.com/hashicorp/memberlist"

	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/transport/clusterkey"
)

// Defaults.
const (
	DefaultPort         = 52416
	DefaultJoinInterval = 5 * time.Second  // bootstrap retries while alone
	DefaultMDNSInterval = 10 * time.Second // between mDNS queries
	decryptLogEvery     = time.Minute      // one mismatch line per host
)

// Errors.
var (
	ErrBadConfig     = errors.New("membership: invalid config")
	ErrClosed        = errors.New("membership: closed")
	ErrUnknownMember = errors.New("membership: not a live member")
	ErrKeyMismatch   = errors.New("membership: key differs from the gossiped key")
	ErrJoin          = errors.New("membership: join failed")
	ErrDecrypt       = errors.New("gossip could not be decrypted: different cluster key or network version")
	ErrOtherFamily   = errors.New("membership: the address is of the other IP family")
)

// JoinError reports the addresses a Join could not reach. errors.Is(err,
// ErrDecrypt) holds when a peer answered under another key.
type JoinError struct {
	Failed map[string]error
}

func (e *JoinError) Error() string {
	addrs := make([]string, 0, len(e.Failed))
	for a := range e.Failed {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	var b strings.Builder
	b.WriteString("membership: join failed")
	for _, a := range addrs {
		fmt.Fprintf(&b, "; %s: %v", a, e.Failed[a])
	}
	return b.String()
}

func (e *JoinError) Unwrap() []error {
	out := []error{ErrJoin}
	for _, err := range e.Failed {
		out = append(out, err)
	}
	return out
}

// Timing tunes SWIM; zero fields keep memberlist's LAN defaults (probe 1 s,
// probe timeout 500 ms, suspicion multiplier 4, gossip 200 ms, push/pull
// 30 s). Tests shorten them.
type Timing struct {
	ProbeInterval    time.Duration
	ProbeTimeout     time.Duration
	SuspicionMult    int
	GossipInterval   time.Duration
	PushPullInterval time.Duration
	TCPTimeout       time.Duration
}

// Config configures a Membership.
type Config struct {
	ClusterKey clusterkey.Key // required
	Meta       Meta           // required; Meta.Node names this node
	// OnRefusal, when set, is told (at the rate the refusal is logged) of
	// each peer address refused for another cluster key or network version,
	// so the node can show it in its diagnostics.
	OnRefusal func(addr, reason string)
	// BindAddr is the gossip address (tcp+udp), default "0.0.0.0:52416";
	// port 0 picks a free port. AdvertiseAddr, if set, is what peers dial.
	BindAddr      string
	AdvertiseAddr string
	// BootstrapPeers (--bootstrap-peers host:port,...) are joined at start
	// and again every JoinInterval while this node is alone.
	BootstrapPeers []string
	JoinInterval   time.Duration
	// MDNS advertises _skulk._udp and joins what it finds (--no-mdns turns
	// it off). MDNSInterface picks the multicast interface (nil: default).
	MDNS          bool
	MDNSInterval  time.Duration
	MDNSInterface *net.Interface
	Timing        Timing
	TelemetryKeys int              // admission map bound, default 256
	Now           func() time.Time // clock for telemetry versions, default time.Now
	Logger        *slog.Logger     // default: discard
}

// EventKind classifies membership events.
type EventKind int

// Membership event kinds.
const (
	EventJoin   EventKind = iota + 1 // a node became a member
	EventLeave                       // a node left gracefully
	EventFailed                      // a node stopped answering and was declared dead
	EventUpdate                      // a member's meta changed
)

func (k EventKind) String() string {
	switch k {
	case EventJoin:
		return "join"
	case EventLeave:
		return "leave"
	case EventFailed:
		return "failed"
	case EventUpdate:
		return "update"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one membership change of another node.
type Event struct {
	Kind   EventKind
	Node   ids.NodeID
	Meta   Meta
	Gossip netip.AddrPort
}

// Member is a live node.
type Member struct {
	Node   ids.NodeID
	Meta   Meta
	Gossip netip.AddrPort
}

// Membership is this node's membership and telemetry service.
type Membership struct {
	// immutable after New
	cfg    Config
	self   ids.NodeID
	log    *slog.Logger
	ml     *memberlist.Memberlist
	bq     *memberlist.TransmitLimitedQueue
	tel    *telemetry
	rtt    rtts // the latest probe round trip to each member
	out    chan Event
	wake   chan struct{} // 1-buffered: events queued
	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mdns   *mdns.Server // nil without MDNS

	mu       sync.Mutex
	meta     []byte                // guarded by mu: encoded local meta
	members  map[ids.NodeID]Member // guarded by mu: live members (self included)
	queue    []Event               // guarded by mu: events not yet handed to the owner
	leaving  map[ids.NodeID]bool   // guarded by mu: members that announced a graceful leave
	decrypts map[string]time.Time  // guarded by mu: last mismatch log per host
}

// New binds the gossip sockets, starts gossip, and starts joining through
// the bootstrap peers and mDNS.
func New(cfg Config) (*Membership, error) {
	if !cfg.ClusterKey.Valid() {
		return nil, fmt.Errorf("%w: no cluster key", ErrBadConfig)
	}
	if cfg.Meta.NetworkVersion == "" {
		cfg.Meta.NetworkVersion = cfg.ClusterKey.NetworkVersion()
	}
	if cfg.Meta.NetworkVersion != cfg.ClusterKey.NetworkVersion() {
		return nil, fmt.Errorf("%w: meta network version %q differs from the key's %q", ErrBadConfig, cfg.Meta.NetworkVersion, cfg.ClusterKey.NetworkVersion())
	}
	meta, err := cfg.Meta.Encode()
	if err != nil {
		return nil, err
	}
	if cfg.BindAddr == "" {
		cfg.BindAddr = "0.0.0.0:" + strconv.Itoa(DefaultPort)
	}
	if cfg.JoinInterval <= 0 {
		cfg.JoinInterval = DefaultJoinInterval
	}
	if cfg.MDNSInterval <= 0 {
		cfg.MDNSInterval = DefaultMDNSInterval
	}
	if cfg.TelemetryKeys <= 0 {
		cfg.TelemetryKeys = DefaultTelemetryKeys
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Membership{
		cfg:      cfg,
		self:     cfg.Meta.Node,
		log:      cfg.Logger,
		tel:      newTelemetry(cfg.TelemetryKeys, cfg.Meta.Node),
		out:      make(chan Event),
		wake:     make(chan struct{}, 1),
		meta:     meta,
		members:  map[ids.NodeID]Member{},
		leaving:  map[ids.NodeID]bool{},
		decrypts: map[string]time.Time{},
	}
	mc, err := m.memberlistConfig()
	if err != nil {
		return nil, err
	}
	m.ml, err = memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("membership: starting gossip on %s: %w", cfg.BindAddr, err)
	}
	m.bq = &memberlist.TransmitLimitedQueue{NumNodes: m.ml.NumMembers, RetransmitMult: 4}
	m.life, m.cancel = context.WithCancel(context.Background())
	if cfg.MDNS {
		if err := m.startMDNS(); err != nil {
			m.cancel()
			m.ml.Shutdown()
			return nil, err
		}
	}
	m.wg.Go(m.pump)
	if len(cfg.BootstrapPeers) > 0 {
		// Said once here: the retries that skip these log at debug.
		for _, a := range cfg.BootstrapPeers {
			if ap, err := netip.ParseAddrPort(a); err == nil && !SameFamily(m.bindIP(), ap.Addr()) {
				m.log.Warn("membership: a bootstrap peer is of the other IP family than the gossip bind, and is not tried",
					"peer", a, "gossip_addr", cfg.BindAddr, "hint", "bind --gossip-addr [::]:PORT to gossip over IPv4 and IPv6")
			}
		}
		m.wg.Go(m.bootstrapLoop)
	}
	return m, nil
}

func (m *Membership) memberlistConfig() (*memberlist.Config, error) {
	mc := memberlist.DefaultLANConfig()
	mc.Name = string(m.self)
	host, port, err := splitHostPort(m.cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: bind address: %v", ErrBadConfig, err)
	}
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertisePort = port
	if m.cfg.AdvertiseAddr != "" {
		if mc.AdvertiseAddr, mc.AdvertisePort, err = splitHostPort(m.cfg.AdvertiseAddr); err != nil {
			return nil, fmt.Errorf("%w: advertise address: %v", ErrBadConfig, err)
		}
	} else if bind, err := netip.ParseAddr(host); err == nil && bind.IsUnspecified() {
		// memberlist's own pick for 0.0.0.0 may be an IPv6 address (a
		// private one ranks above a public IPv4 one), which peers on IPv4
		// fail to reach at every gossip round: keep to the bind's family.
		if a, ok := pickAdvertise(bind, advertiseCandidates()); ok {
			mc.AdvertiseAddr = a.String()
		}
	}
	key := m.cfg.ClusterKey.Derive(clusterkey.PurposeGossip)
	kr, err := memberlist.NewKeyring(nil, key[:])
	if err != nil {
		return nil, fmt.Errorf("membership: keyring: %w", err)
	}
	mc.Keyring = kr
	mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	d := (*delegate)(m)
	mc.Delegate, mc.Events, mc.Alive, mc.Merge, mc.Ping = d, d, d, d, d
	mc.Logger = log.New(logBridge{m}, "", 0)
	t := m.cfg.Timing
	set := func(dst *time.Duration, v time.Duration) {
		if v > 0 {
			*dst = v
		}
	}
	set(&mc.ProbeInterval, t.ProbeInterval)
	set(&mc.ProbeTimeout, t.ProbeTimeout)
	set(&mc.GossipInterval, t.GossipInterval)
	set(&mc.PushPullInterval, t.PushPullInterval)
	set(&mc.TCPTimeout, t.TCPTimeout)
	if t.SuspicionMult > 0 {
		mc.SuspicionMult = t.SuspicionMult
	}
	return mc, nil
}

func splitHostPort(s string) (string, int, error) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	if h == "" {
		h = "0.0.0.0"
	}
	return h, port, nil
}

// Events delivers other nodes' membership changes, in order, to one owner.
// It is closed by Close.
func (m *Membership) Events() <-chan Event { return m.out }

// pump hands queued events to the owner without ever blocking memberlist.
func (m *Membership) pump() {
	defer close(m.out)
	for {
		m.mu.Lock()
		var ev Event
		have := len(m.queue) > 0
		if have {
			ev = m.queue[0]
			m.queue[0] = Event{}
			m.queue = m.queue[1:]
		}
		m.mu.Unlock()
		if !have {
			select {
			case <-m.wake:
				continue
			case <-m.life.Done():
				return
			}
		}
		select {
		case m.out <- ev:
		case <-m.life.Done():
			return
		}
	}
}

func (m *Membership) enqueue(ev Event) {
	m.mu.Lock()
	m.queue = append(m.queue, ev)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Self returns this node's id.
func (m *Membership) Self() ids.NodeID { return m.self }

// GossipAddr returns the address peers gossip with.
func (m *Membership) GossipAddr() netip.AddrPort {
	n := m.ml.LocalNode()
	return gossipAddr(n)
}

func gossipAddr(n *memberlist.Node) netip.AddrPort {
	ip, _ := netip.AddrFromSlice(n.Addr)
	return netip.AddrPortFrom(ip.Unmap(), n.Port)
}

// Members returns the live members, this node included, sorted by node id.
func (m *Membership) Members() []Member {
	m.mu.Lock()
	out := make([]Member, 0, len(m.members))
	for _, mb := range m.members {
		out = append(out, mb)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(string(a.Node), string(b.Node)) })
	return out
}

// MemberIDs returns the live members' ids, this node included, sorted.
func (m *Membership) MemberIDs() []ids.NodeID {
	var out []ids.NodeID
	for _, mb := range m.Members() {
		out = append(out, mb.Node)
	}
	return out
}

// Member returns one live member.
func (m *Membership) Member(node ids.NodeID) (Member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mb, ok := m.members[node]
	return mb, ok
}

// VerifyPeer reports whether key is the public key node gossiped; it is the
// transport's Config.VerifyPeer.
func (m *Membership) VerifyPeer(node ids.NodeID, key ed25519.PublicKey) error {
	mb, ok := m.Member(node)
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownMember, node)
	}
	if !mb.Meta.PublicKey.Equal(key) {
		return fmt.Errorf("%w: node %s", ErrKeyMismatch, node)
	}
	return nil
}

// UpdateMeta replaces this node's meta and gossips it. Node and network
// version cannot change.
func (m *Membership) UpdateMeta(ctx context.Context, meta Meta) error {
	if meta.NetworkVersion == "" {
		meta.NetworkVersion = m.cfg.Meta.NetworkVersion
	}
	if meta.Node != m.self || meta.NetworkVersion != m.cfg.Meta.NetworkVersion {
		return fmt.Errorf("%w: node id and network version are fixed", ErrBadConfig)
	}
	b, err := meta.Encode()
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.meta = b
	m.mu.Unlock()
	return m.ml.UpdateNode(timeout(ctx, 5*time.Second))
}

func timeout(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return def
}

// Join contacts each address (host:port of a gossip endpoint) and returns
// how many answered. Each attempt is bounded by the TCP timeout; ctx is
// checked between addresses.
func (m *Membership) Join(ctx context.Context, addrs []string) (int, error) {
	joined := 0
	je := &JoinError{Failed: map[string]error{}}
	bind := m.bindIP()
	for _, a := range addrs {
		if err := ctx.Err(); err != nil {
			return joined, err
		}
		if m.life.Err() != nil {
			return joined, ErrClosed
		}
		// An address of the other family is not tried: on a network
		// without it every try fails.
		if ap, err := netip.ParseAddrPort(a); err == nil && !SameFamily(bind, ap.Addr()) {
			je.Failed[a] = fmt.Errorf("%w: gossip is bound to %s (--gossip-addr %s); bind [::]:PORT to gossip over IPv4 and IPv6",
				ErrOtherFamily, bind, m.cfg.BindAddr)
			continue
		}
		n, err := m.ml.Join([]string{a})
		if err == nil && n > 0 {
			joined += n
			continue
		}
		if err == nil {
			err = errors.New("no answer")
		}
		if isDecryptError(err.Error()) {
			m.logDecrypt(a)
			err = fmt.Errorf("%w (%v)", ErrDecrypt, err)
		}
		je.Failed[a] = err
	}
	if joined == 0 && len(je.Failed) > 0 {
		return 0, je
	}
	return joined, nil
}

// bindIP is the address gossip is bound to; invalid when it is a name.
func (m *Membership) bindIP() netip.Addr {
	host, _, err := splitHostPort(m.cfg.BindAddr)
	if err != nil {
		return netip.Addr{}
	}
	a, _ := netip.ParseAddr(host)
	return a
}

func (m *Membership) bootstrapLoop() {
	t := time.NewTimer(0)
	defer t.Stop()
	// The first retries come quickly, then back off to JoinInterval: peers
	// started at the same moment are listening a fraction of a second
	// later, and a node that waits seconds for them founds a cluster of its
	// own meanwhile.
	wait := min(firstJoinRetry, m.cfg.JoinInterval)
	for {
		select {
		case <-m.life.Done():
			return
		case <-t.C:
		}
		if m.ml.NumMembers() <= 1 {
			if _, err := m.Join(m.life, m.cfg.BootstrapPeers); err != nil && !errors.Is(err, ErrDecrypt) && m.life.Err() == nil {
				m.log.Debug("membership: bootstrap join failed; retrying", "err", err, "retry_in", wait)
			}
		}
		t.Reset(wait)
		wait = min(2*wait, m.cfg.JoinInterval)
	}
}

// firstJoinRetry is the first wait between bootstrap joins.
const firstJoinRetry = 250 * time.Millisecond

// Publish sets this node's telemetry reading for key and gossips it. The
// version is the clock's nanoseconds, or the last version + 1 if the clock
// went back, so a restarted node's readings still win.
func (m *Membership) Publish(key string, value []byte) error {
	r := Reading{Node: m.self, Key: key, Value: slices.Clone(value)}
	r.Version = max(uint64(m.cfg.Now().UnixNano()), m.tel.lastVersion(m.self, key)+1)
	if err := r.check(); err != nil {
		return err
	}
	ok, err := m.tel.admit(r)
	if err != nil {
		return err
	}
	if ok {
		m.bq.QueueBroadcast(newReadingBroadcast(r))
	}
	return nil
}

// Readings returns every admitted reading, sorted by node then key.
func (m *Membership) Readings() []Reading { return m.tel.snapshot() }

// TelemetryChanged receives a value after readings change (coalesced).
func (m *Membership) TelemetryChanged() <-chan struct{} { return m.tel.changed }

// Leave announces a graceful departure and waits up to ctx (default 5 s)
// for it to spread. Close still has to be called.
//
// memberlist does not tell its delegates whether a node left or died, so
// Leave first tells every member over TCP (msgLeaving); a member that hears
// it reports the departure as EventLeave, and one that missed it reports
// EventFailed, the safe side.
//
// The notice (TCP) and memberlist's departure broadcast (UDP gossip) reach a
// member on different goroutines with no order between them, so a member
// busy enough to handle the broadcast first reports EventFailed even though
// the notice was delivered.
func (m *Membership) Leave(ctx context.Context) error {
	m.announceLeave(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	// The leave broadcast goes out with the next gossip round (200 ms);
	// when every peer is stopping too none takes it, and waiting longer
	// only delays the stop.
	return m.ml.Leave(min(timeout(ctx, leaveBroadcastWait), leaveBroadcastWait))
}

// leaveBroadcastWait bounds the wait for the leave broadcast.
const leaveBroadcastWait = time.Second

// leaveNoticeWait bounds the wait for the leave notices: a peer that is
// stopping too (the whole cluster stopped at once) may take a notice's
// connection and never read it, and a notice is only a courtesy (the
// failure detector finds a node gone without it).
const leaveNoticeWait = time.Second

// announceLeave sends every other member the leave notice and returns once
// each send has completed or failed (not once it has been handled), or
// after leaveNoticeWait or ctx; a send still under way ends with Close.
func (m *Membership) announceLeave(ctx context.Context) {
	msg := append([]byte{msgLeaving}, m.self...)
	sent := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range m.ml.Members() {
		if n.Name == string(m.self) {
			continue
		}
		wg.Go(func() {
			if err := m.ml.SendReliable(n, msg); err != nil {
				m.log.Debug("membership: leave notice not delivered", "node", n.Name, "err", err)
			}
		})
	}
	m.wg.Go(func() { wg.Wait(); close(sent) })
	t := time.NewTimer(leaveNoticeWait)
	defer t.Stop()
	select {
	case <-sent:
	case <-t.C:
		m.log.Debug("membership: leave notices still under way; going on")
	case <-ctx.Done():
	}
}

// Close leaves nothing running: the gossip stops, and with it any leave
// notice still being sent.
func (m *Membership) Close() error {
	m.cancel()
	var errs []error
	if m.mdns != nil {
		errs = append(errs, m.mdns.Shutdown())
	}
	errs = append(errs, m.ml.Shutdown())
	m.wg.Wait()
	return errors.Join(errs...)
}

// logDecrypt logs the key mismatch once per host per decryptLogEvery.
func (m *Membership) logDecrypt(addr string) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	now := time.Now()
	m.mu.Lock()
	last, seen := m.decrypts[host]
	quiet := seen && now.Sub(last) < decryptLogEvery
	if !quiet {
		m.decrypts[host] = now
	}
	if len(m.decrypts) > 1024 {
		for h, t := range m.decrypts {
			if now.Sub(t) >= decryptLogEvery {
				delete(m.decrypts, h)
			}
		}
	}
	m.mu.Unlock()
	if !quiet {
		m.log.Warn("gossip from "+addr+" could not be decrypted: different cluster key or network version",
			"peer_addr", addr, "network_version", m.cfg.Meta.NetworkVersion)
		if m.cfg.OnRefusal != nil {
			m.cfg.OnRefusal(addr, ErrDecrypt.Error())
		}
	}
}

func isDecryptError(s string) bool {
	return strings.Contains(s, "could decrypt") || strings.Contains(s, "Decrypt packet failed") ||
		strings.Contains(s, "encryption is configured but remote state is not encrypted")
}

var fromAddr = regexp.MustCompile(`from=(\S+)`)

// logBridge turns memberlist's log lines into slog records, and its
// decryption failures into the one clear mismatch line.
type logBridge struct{ m *Membership }

func (l logBridge) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	level := slog.LevelDebug
	switch {
	case strings.HasPrefix(line, "[ERR]"):
		level = slog.LevelError
		if isDecryptError(line) {
			addr := "unknown"
			if sm := fromAddr.FindStringSubmatch(line); sm != nil {
				addr = sm[1]
			}
			l.m.logDecrypt(addr)
			level = slog.LevelDebug
		}
	case strings.HasPrefix(line, "[WARN]"):
		level = slog.LevelWarn
	case strings.HasPrefix(line, "[INFO]"):
		level = slog.LevelInfo
	}
	l.m.log.Log(context.Background(), level, line, "component", "memberlist")
	return len(p), nil
}
