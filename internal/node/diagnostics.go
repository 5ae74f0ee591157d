package node

import (
	"context"
	"net"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/control/plane"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/gateway"
	"github.com/skulk/skulk/internal/serving/link"
)

// refusals remembers the latest peers refused for another cluster key or
// network version, for the diagnostics document.
type refusals struct {
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

func (r *refusals) add(addr, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// One line per host: a peer knocking again (from any port) updates its line.
	r.list = slices.DeleteFunc(r.list, func(x Refusal) bool { return hostOf(x.Addr) == hostOf(addr) })
	r.list = append(r.list, Refusal{Addr: addr, Reason: reason, At: time.Now()})
	if len(r.list) > maxRefusals {
		r.list = r.list[len(r.list)-maxRefusals:]
	}
}

func (r *refusals) all() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal{}, r.list...)
}

// NodeDiagnostics is one node's line in GET /v1/diagnostics/cluster.
type NodeDiagnostics struct {
	NodeID           ids.NodeID `json:"nodeId"`
	Role             string     `json:"role"` // master or follower
	Term             ids.Term   `json:"term"`
	LastAppliedIndex ids.Index  `json:"lastAppliedIndex"`
	StateHash        string     `json:"stateHash"`
	Version          string     `json:"version"`
	Commit           string     `json:"commit"`
	Reachable        bool       `json:"reachable"`
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
}

// ClusterDiagnostics is the GET /v1/diagnostics/cluster document.
type ClusterDiagnostics struct {
	MasterNodeID  ids.NodeID        `json:"masterNodeId"`
	Term          ids.Term          `json:"term"`
	VersionStatus string            `json:"versionStatus"` // ok or mismatch
	Nodes         []NodeDiagnostics `json:"nodes"`
	Refused       []Refusal         `json:"refused"`
	// Edges lists every edge of every split instance (edgestats.go).
	Edges []link.EdgeDiagnostics `json:"edges"`
	// Consensus is the Raft group as this node sees it: term, leader,
	// commit index, the voters and learners (and, on the leader, each
	// one's match index).
	Consensus plane.Consensus `json:"consensus"`
}

func diagnostics(self ids.NodeID, ctl *plane.Plane, p *peers, refused *refusals, own *persistence, edges func() *link.Edges) func(ctx context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		positions := map[ids.NodeID]plane.Position{}
		persist := map[ids.NodeID]persistReading{}
		if m := p.get(); m != nil {
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
		persist[self] = own.reading()
		doc := ClusterDiagnostics{MasterNodeID: ctl.Leader(), VersionStatus: "ok", Nodes: []NodeDiagnostics{}, Refused: refused.all(),
			Edges: []link.EdgeDiagnostics{}, Consensus: ctl.ConsensusStatus()}
		live := map[ids.NodeID]bool{self: true}
		for _, n := range p.members() {
			live[n] = true
		}
		if st, err := ctl.State(ctx); err == nil {
			if e := edges(); e != nil {
				doc.Edges = e.Diagnostics(st, p.get())
			}
			doc.Term = st.Term
			for _, n := range st.NodeIDs() {
				if !live[n] {
					positions[n] = plane.Position{}
					live[n] = false
				}
			}
		}
		seen := p.addresses()
		version := positions[self].Version
		for n, pos := range positions {
			role := "follower"
			if pos.MasterOf > 0 && n == doc.MasterNodeID {
				role = "master"
			}
			if live[n] && pos.Version != "" && pos.Version != version {
				doc.VersionStatus = "mismatch"
			}
			d := NodeDiagnostics{NodeID: n, Role: role, Term: pos.Term, LastAppliedIndex: pos.Index,
				StateHash: pos.StateHash, Version: pos.Version, Commit: pos.Commit, Reachable: live[n],
				Health: gateway.HealthOK, Persistence: persist[n].issues()}
			if a, ok := seen[n]; ok {
				d.Gossip, d.API, d.QUIC = a.gossip, a.api, a.quic
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

// seenAddrs is where a member was last seen.
type seenAddrs struct {
	gossip    string
	api, quic []string
}

// maxSeen bounds the nodes whose addresses are remembered.
const maxSeen = 256

// remember records where a member is, from a membership event or the
// live members; the addresses outlast the member, so the diagnostics can
// say where a lost node was.
func (p *peers) remember(m membership.Member) {
	if m.Node == "" {
		return
	}
	a := seenAddrs{api: strs(m.Meta.API), quic: strs(m.Meta.QUIC)}
	if m.Gossip.IsValid() {
		a.gossip = m.Gossip.String()
	}
	p.seenMu.Lock()
	defer p.seenMu.Unlock()
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

// addresses is where every member is or was last seen.
func (p *peers) addresses() map[ids.NodeID]seenAddrs {
	if m := p.get(); m != nil {
		for _, mb := range m.Members() {
			p.remember(mb)
		}
	}
	p.seenMu.Lock()
	defer p.seenMu.Unlock()
	out := make(map[ids.NodeID]seenAddrs, len(p.seen))
	for k, v := range p.seen {
		out[k] = v
	}
	return out
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
