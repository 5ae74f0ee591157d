package membership

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/mdns"

	"github.com/skulk/skulk/internal/platform/ids"
)

// MDNSService is the DNS-SD service Skulk nodes advertise; the port is the
// gossip port and the instance name is the node id.
const MDNSService = "_skulk._udp"

// startMDNS advertises the gossip address and starts the discovery loop.
func (m *Membership) startMDNS() error {
	ga := m.GossipAddr()
	if !ga.Addr().IsValid() || ga.Addr().IsUnspecified() {
		return fmt.Errorf("%w: mDNS needs a concrete advertise address, have %v", ErrBadConfig, ga)
	}
	lg := log.New(mdnsLog{m.log}, "", 0)
	svc, err := mdns.NewMDNSService(string(m.self), MDNSService, "", string(m.self)+".local.", int(ga.Port()),
		[]net.IP{net.IP(ga.Addr().AsSlice())}, []string{"nv=" + m.cfg.Meta.NetworkVersion, "cid=" + m.cfg.ClusterKey.Fingerprint()})
	if err != nil {
		return fmt.Errorf("membership: mDNS service: %w", err)
	}
	m.mdns, err = mdns.NewServer(&mdns.Config{Zone: svc, Iface: m.cfg.MDNSInterface, Logger: lg})
	if err != nil {
		return fmt.Errorf("membership: mDNS: %w", err)
	}
	m.wg.Go(func() { m.discoverLoop(lg) })
	return nil
}

// discoverLoop queries for peers every MDNSInterval and joins the ones that
// are not members yet.
func (m *Membership) discoverLoop(lg *log.Logger) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-m.life.Done():
			return
		case <-t.C:
		}
		m.discoverOnce(lg)
		t.Reset(m.cfg.MDNSInterval)
	}
}

func (m *Membership) discoverOnce(lg *log.Logger) {
	entries := make(chan *mdns.ServiceEntry, 64)
	q := mdns.DefaultParams(MDNSService)
	q.Entries = entries
	q.Interface = m.cfg.MDNSInterface
	q.Timeout = min(m.cfg.MDNSInterval, defaultQueryTimeout)
	q.DisableIPv6 = true
	q.Logger = lg
	err := mdns.QueryContext(m.life, q)
	close(entries)
	if err != nil && m.life.Err() == nil {
		m.log.Debug("membership: mDNS query failed", "err", err)
	}
	var addrs []string
	for e := range entries {
		node := ids.NodeID(strings.TrimSuffix(e.Name, "."+MDNSService+".local."))
		if node == m.self || node.Validate() != nil {
			continue
		}
		if _, ok := m.Member(node); ok {
			continue
		}
		ip := e.AddrV4
		if ip == nil {
			continue
		}
		addr := net.JoinHostPort(ip.String(), strconv.Itoa(e.Port))
		if cid, ok := txtField(e.InfoFields, "cid"); ok && cid != m.cfg.ClusterKey.Fingerprint() {
			// A member of another cluster: knocking would only be refused.
			m.log.Debug("membership: mDNS found a node of another cluster", "peer", node, "peer_addr", addr)
			if m.cfg.OnRefusal != nil {
				m.cfg.OnRefusal(addr, ReasonForeignCluster)
			}
			continue
		}
		addrs = append(addrs, addr)
	}
	if len(addrs) > 0 && m.life.Err() == nil {
		if _, err := m.Join(m.life, addrs); err != nil {
			m.log.Debug("membership: joining mDNS peers failed", "err", err)
		}
	}
}

// ReasonForeignCluster is the refusal reason of a node that mDNS found but
// that announces another cluster's fingerprint.
const ReasonForeignCluster = "discovered, not a member: it announces another cluster (join it with `skulk run --join INVITE`)"

// txtField returns the value of key=value among an mDNS record's TXT fields.
func txtField(fields []string, key string) (string, bool) {
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// mdnsLog sends the mdns library's lines to debug.
type mdnsLog struct{ l *slog.Logger }

func (w mdnsLog) Write(p []byte) (int, error) {
	w.l.Log(context.Background(), slog.LevelDebug, strings.TrimSpace(string(p)), "component", "mdns")
	return len(p), nil
}

const defaultQueryTimeout = time.Second
