package diagnostics

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/control/plane"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/observe/telemetry"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/gateway"
	"github.com/skulk/skulk/internal/serving/link"
)

// Refusals remembers the latest peers refused for another cluster key or
// network version, for the diagnostics document. Safe for concurrent use.
type Refusals struct {
	mu   sync.Mutex
	list []Refusal
}

// Refusal is one refused peer.
type Refusal struct {
	Addr   string    `json:"addr"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

const maxRefusals = 32

// Add is the transport's and the membership's OnRefusal.
func (r *Refusals) Add(addr, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// One line per host: a peer knocking again (from any port) updates its line.
	r.list = slices.DeleteFunc(r.list, func(x Refusal) bool { return hostOf(x.Addr) == hostOf(addr) })
	r.list = append(r.list, Refusal{Addr: addr, Reason: reason, At: time.Now()})
	if len(r.list) > maxRefusals {
		r.list = r.list[len(r.list)-maxRefusals:]
	}
}

// All lists the refusals, oldest first.
func (r *Refusals) All() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal{}, r.list...)
}

// NodeDiagnostics is one node's line in GET /v1/diagnostics/cluster.
type NodeDiagnostics struct {
	NodeID ids.NodeID `json:"nodeId"`
	// Name is what people call the node (its --name, else its host name),
	// as it last published it; empty for a node never seen live or one
	// from before names.
	Name             string    `json:"name,omitempty"`
	Role             string    `json:"role"` // master or follower
	Term             ids.Term  `json:"term"`
	LastAppliedIndex ids.Index `json:"lastAppliedIndex"`
	StateHash        string    `json:"stateHash"`
	Version          string    `json:"version"`
	Commit           string    `json:"commit"`
	Reachable        bool      `json:"reachable"`
	// Health is error when the node's writes are not durable, and
	// Persistence then says why and what to do.
	Health      string                     `json:"health"`
	Persistence []gateway.PersistenceIssue `json:"persistence,omitempty"`
	// Gossip, API and QUIC are where the node was last seen: the addresses
	// it gossiped while it was a member (kept after it is lost), for
	// `skulk doctor` to probe; empty for a node never seen live.
	Gossip string   `json:"gossipAddr,omitempty"`
	API    []string `json:"apiAddrs,omitempty"`
	QUIC   []string `json:"quicAddrs,omitempty"`
	// Cores, TotalBytes and AvailableBytes are the live node's latest
	// resources reading (memory as --memory-budget caps it); absent for a
	// lost node and before its first reading.
	Cores          int   `json:"cores,omitempty"`
	TotalBytes     int64 `json:"totalBytes,omitempty"`
	AvailableBytes int64 `json:"availableBytes,omitempty"`
}

// ClusterDiagnostics is the GET /v1/diagnostics/cluster document.
type ClusterDiagnostics struct {
	MasterNodeID  ids.NodeID        `json:"masterNodeId"`
	Term          ids.Term          `json:"term"`
	VersionStatus string            `json:"versionStatus"` // ok or mismatch
	Nodes         []NodeDiagnostics `json:"nodes"`
	Refused       []Refusal         `json:"refused"`
	// Edges lists every edge of every split instance (internal/serving/link).
	Edges []link.EdgeDiagnostics `json:"edges"`
	// Consensus is the Raft group as this node sees it: term, leader,
	// commit index, the voters and learners (and, on the leader, each
	// one's match index).
	Consensus plane.Consensus `json:"consensus"`
}

// Plane is the control plane as the diagnostics read it.
type Plane interface {
	State(ctx context.Context) (state.State, error)
	Position() plane.Position
	Leader() ids.NodeID
	IsMaster() bool
	ConsensusStatus() plane.Consensus
}

// Sources are what the diagnostics read of the node.
type Sources struct {
	Self ids.NodeID
	// Name is this node's name.
	Name string
	// Version is this node's software version.
	Version string
	Plane   Plane
	// Membership is the membership, nil before it is up.
	Membership func() *membership.Membership
	Own        *Persistence
	Refused    *Refusals
	Seen       *Seen
	// Edges is the node's side of the pipeline links, nil before the
	// edge socket is open.
	Edges func() *link.Edges
}

// members lists the live members' ids.
func (s Sources) members() []ids.NodeID {
	m := s.Membership()
	if m == nil {
		return nil
	}
	return m.MemberIDs()
}

// Cluster answers GET /v1/diagnostics/cluster.
func Cluster(s Sources) func(ctx context.Context) (any, error) {
	self, ctl := s.Self, s.Plane
	return func(ctx context.Context) (any, error) {
		positions := map[ids.NodeID]plane.Position{}
		persist := map[ids.NodeID]persistReading{}
		m := s.Membership()
		if m != nil {
			for _, r := range m.Readings() {
				if r.Key == plane.PositionKey {
					if pos, err := plane.DecodePosition(r.Value); err == nil {
						positions[r.Node] = pos
					}
				}
			}
			persist = persistReadings(m.Readings())
		}
		positions[self] = ctl.Position()
		persist[self] = s.Own.reading()
		doc := ClusterDiagnostics{MasterNodeID: ctl.Leader(), VersionStatus: "ok", Nodes: []NodeDiagnostics{}, Refused: s.Refused.All(),
			Edges: []link.EdgeDiagnostics{}, Consensus: ctl.ConsensusStatus()}
		live := map[ids.NodeID]bool{self: true}
		for _, n := range s.members() {
			live[n] = true
		}
		if st, err := ctl.State(ctx); err == nil {
			if e := s.Edges(); e != nil {
				doc.Edges = e.Diagnostics(st, m)
			}
			doc.Term = st.Term
			for _, n := range st.NodeIDs() {
				if !live[n] {
					positions[n] = plane.Position{}
					live[n] = false
				}
			}
		}
		seen := s.Seen.addresses(m)
		res := resources(m)
		names := s.Seen.names(res)
		names[self] = s.Name
		version := positions[self].Version
		for n, pos := range positions {
			role := "follower"
			if pos.MasterOf > 0 && n == doc.MasterNodeID {
				role = "master"
			}
			if live[n] && pos.Version != "" && pos.Version != version {
				doc.VersionStatus = "mismatch"
			}
			d := NodeDiagnostics{NodeID: n, Name: names[n], Role: role, Term: pos.Term, LastAppliedIndex: pos.Index,
				StateHash: pos.StateHash, Version: pos.Version, Commit: pos.Commit, Reachable: live[n],
				Health: gateway.HealthOK, Persistence: persist[n].issues()}
			if a, ok := seen[n]; ok {
				d.Gossip, d.API, d.QUIC = a.gossip, a.api, a.quic
			}
			if r, ok := res[n]; ok && live[n] {
				d.Cores, d.TotalBytes, d.AvailableBytes = r.CPU.Cores, r.TotalBytes, r.AvailableBytes
			}
			if len(d.Persistence) > 0 {
				d.Health = gateway.HealthError
			}
			doc.Nodes = append(doc.Nodes, d)
		}
		sort.Slice(doc.Nodes, func(i, j int) bool { return doc.Nodes[i].NodeID < doc.Nodes[j].NodeID })
		return doc, nil
	}
}

// Warning is the API's X-Skulk-Warning: what keeps this node, or the
// master that keeps the cluster's decisions, from keeping what a request
// changes.
func Warning(s Sources) string {
	parts := []string{}
	if w := s.Own.reading().warning(s.Self); w != "" {
		parts = append(parts, w)
	}
	if leader := s.Plane.Leader(); leader != "" && leader != s.Self {
		if m := s.Membership(); m != nil {
			if w := persistReadings(m.Readings())[leader].warning(leader); w != "" {
				parts = append(parts, w)
			}
		}
	}
	return strings.Join(parts, "; ")
}

// Seen remembers where members were last seen. Safe for concurrent use.
type Seen struct {
	mu    sync.Mutex
	seen  map[ids.NodeID]seenAddrs // where members were last seen
	named map[ids.NodeID]string    // the names they last published
}

// seenAddrs is where a member was last seen.
type seenAddrs struct {
	gossip    string
	api, quic []string
}

// maxSeen bounds the nodes whose addresses are remembered.
const maxSeen = 256

// Remember records where a member is, from a membership event or the
// live members; the addresses outlast the member, so the diagnostics can
// say where a lost node was.
func (p *Seen) Remember(m membership.Member) {
	if m.Node == "" {
		return
	}
	a := seenAddrs{api: strs(m.Meta.API), quic: strs(m.Meta.QUIC)}
	if m.Gossip.IsValid() {
		a.gossip = m.Gossip.String()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[ids.NodeID]seenAddrs{}
	}
	if _, ok := p.seen[m.Node]; !ok && len(p.seen) >= maxSeen {
		for k := range p.seen { // forget one at random: a bound, not a policy
			delete(p.seen, k)
			break
		}
	}
	old := p.seen[m.Node]
	if a.gossip == "" {
		a.gossip = old.gossip
	}
	if len(a.api) == 0 {
		a.api = old.api
	}
	if len(a.quic) == 0 {
		a.quic = old.quic
	}
	p.seen[m.Node] = a
}

// names is the name every member of m (nil before the membership is up)
// publishes, or published last while it was a member.
func (p *Seen) names(res map[ids.NodeID]telemetry.Resources) map[ids.NodeID]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.named == nil {
		p.named = map[ids.NodeID]string{}
	}
	for n, r := range res {
		name := r.Name
		if name == "" {
			continue
		}
		if _, ok := p.named[n]; !ok && len(p.named) >= maxSeen {
			for k := range p.named { // forget one at random: a bound, not a policy
				delete(p.named, k)
				break
			}
		}
		p.named[n] = name
	}
	return maps.Clone(p.named)
}

// resources is the latest resources reading of each member of m (nil m:
// none).
func resources(m *membership.Membership) map[ids.NodeID]telemetry.Resources {
	out := map[ids.NodeID]telemetry.Resources{}
	if m == nil {
		return out
	}
	for _, r := range m.Readings() {
		if r.Key != telemetry.ResourcesKey {
			continue
		}
		var v telemetry.Resources
		if json.Unmarshal(r.Value, &v) == nil {
			out[r.Node] = v
		}
	}
	return out
}

// addresses is where every member of m (nil before the membership is up)
// is or was last seen.
func (p *Seen) addresses(m *membership.Membership) map[ids.NodeID]seenAddrs {
	if m != nil {
		for _, mb := range m.Members() {
			p.Remember(mb)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[ids.NodeID]seenAddrs, len(p.seen))
	for k, v := range p.seen {
		out[k] = v
	}
	return out
}

func strs(aps []netip.AddrPort) []string {
	out := make([]string, len(aps))
	for i, a := range aps {
		out[i] = a.String()
	}
	return out
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
