package link

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/observe/telemetry"
	"github.com/skulk/skulk/internal/platform/ids"
)

// edgesKey is the telemetry reading of the pipeline links a node sends on:
// how the cluster diagnostics show every edge, and how the master names
// the edge that kept a split instance from coming up.
const edgesKey = "edges"

// edgeLink is one link in the edges reading, short-named: a reading must
// fit membership.MaxReadingValue.
type edgeLink struct {
	Instance ids.InstanceID `json:"i"`
	Link     int            `json:"k"`
	State    string         `json:"s"`
	Err      string         `json:"e,omitempty"`
	Objects  uint64         `json:"o"`
	Bytes    uint64         `json:"b"`
	P50us    int64          `json:"p50"`
	P99us    int64          `json:"p99"`
}

// maxLinkErr bounds a link's error in the reading.
const maxLinkErr = 120

func toEdgeLink(r LinkReport) edgeLink {
	l := edgeLink{Instance: ids.InstanceID(r.Instance), Link: r.Link, State: r.State, Err: r.Err, Objects: r.Objects, Bytes: r.Bytes,
		P50us: r.P50.Microseconds(), P99us: r.P99.Microseconds()}
	if len(l.Err) > maxLinkErr {
		l.Err = l.Err[:maxLinkErr]
	}
	return l
}

// encodeEdges encodes as many links as fit one reading, the links still
// connecting first: they are what a stuck instance's diagnosis needs.
func encodeEdges(links []edgeLink) []byte {
	ordered := make([]edgeLink, 0, len(links))
	for _, pass := range []bool{false, true} {
		for _, l := range links {
			if (l.State == LinkConnected || l.State == LinkClosed) == pass {
				ordered = append(ordered, l)
			}
		}
	}
	for n := len(ordered); n >= 0; n-- {
		b, _ := json.Marshal(ordered[:n])
		if len(b) <= membership.MaxReadingValue {
			return b
		}
	}
	return []byte("[]")
}

type linkKey struct {
	inst ids.InstanceID
	link int
}

// links is every link report the node knows: its own relay's, and the
// other members' from their readings (m is nil before the membership is
// up).
func (e *Edges) links(m *membership.Membership) map[ids.NodeID]map[linkKey]edgeLink {
	out := map[ids.NodeID]map[linkKey]edgeLink{}
	if m != nil {
		for _, r := range m.Readings() {
			var ls []edgeLink
			if r.Key != edgesKey || r.Node == e.self || json.Unmarshal(r.Value, &ls) != nil {
				continue
			}
			out[r.Node] = map[linkKey]edgeLink{}
			for _, l := range ls {
				out[r.Node][linkKey{l.Instance, l.Link}] = l
			}
		}
	}
	own := map[linkKey]edgeLink{}
	for _, r := range e.Relay.Links() {
		l := toEdgeLink(r)
		own[linkKey{l.Instance, l.Link}] = l
	}
	out[e.self] = own
	return out
}

// LinkState is GroupConnect's Link: what node from, the link's sending
// rank's, reports about it. mem is the membership, nil before it is up.
func (e *Edges) LinkState(mem func() *membership.Membership) func(ids.NodeID, ids.InstanceID, int) (string, string) {
	return func(from ids.NodeID, inst ids.InstanceID, link int) (string, string) {
		l, ok := e.links(mem())[from][linkKey{inst, link}]
		if !ok {
			return "", ""
		}
		return l.State, l.Err
	}
}

// Publish gossips this node's link reports every telemetry interval
// (when they changed) and forgets the links of instances the State no
// longer holds, until ctx ends.
func (e *Edges) Publish(ctx context.Context, m *membership.Membership, st func(context.Context) (state.State, error), log *slog.Logger) {
	tick := time.NewTicker(telemetry.Interval)
	defer tick.Stop()
	var last []byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if s, err := st(ctx); err == nil {
			e.Relay.Forget(func(inst string) bool { _, ok := s.Instances[ids.InstanceID(inst)]; return ok })
			e.forget(func(inst ids.InstanceID) bool { _, ok := s.Instances[inst]; return ok })
		}
		var links []edgeLink
		for _, r := range e.Relay.Links() {
			links = append(links, toEdgeLink(r))
		}
		b := encodeEdges(links)
		if string(b) == string(last) {
			continue
		}
		if err := m.Publish(edgesKey, b); err != nil {
			log.Warn("cannot publish the pipeline links", "err", err)
			continue
		}
		last = b
	}
}

// EdgeDiagnostics is one edge of a split instance in GET
// /v1/diagnostics/cluster: link Link from rank FromRank to the next rank,
// as the relay of the sending rank's node measured it (bytes and objects
// since the link connected; hop latency send → ack over its latest
// objects, see relaymeter.go).
type EdgeDiagnostics struct {
	Instance ids.InstanceID `json:"instance"`
	Model    ids.ModelID    `json:"model"`
	Link     int            `json:"link"`
	FromRank int            `json:"fromRank"`
	FromNode ids.NodeID     `json:"fromNode"`
	ToRank   int            `json:"toRank"`
	ToNode   ids.NodeID     `json:"toNode"`
	// State is waiting, connected or closed, or unknown when the sending
	// node has reported nothing about the link.
	State   string  `json:"state"`
	Error   string  `json:"error,omitempty"`
	Bytes   uint64  `json:"bytes"`
	Objects uint64  `json:"objects"`
	P50Ms   float64 `json:"p50Ms"`
	P99Ms   float64 `json:"p99Ms"`
}

// Diagnostics lists every edge of every split instance of st, as the
// members' readings (m, nil before the membership is up) and this node's
// relay report them.
func (e *Edges) Diagnostics(st state.State, m *membership.Membership) []EdgeDiagnostics {
	return edgeDiagnostics(st, e.links(m))
}

// edgeDiagnostics lists every edge of every split instance of st.
func edgeDiagnostics(st state.State, links map[ids.NodeID]map[linkKey]edgeLink) []EdgeDiagnostics {
	out := []EdgeDiagnostics{}
	insts := make([]ids.InstanceID, 0, len(st.Instances))
	for id := range st.Instances {
		insts = append(insts, id)
	}
	slices.Sort(insts)
	for _, id := range insts {
		in := st.Instances[id]
		n := len(in.Placement)
		if n < 2 {
			continue
		}
		for k := range n {
			d := EdgeDiagnostics{Instance: id, Model: in.Model, Link: k, FromRank: k, FromNode: in.Placement[k].Node,
				ToRank: (k + 1) % n, ToNode: in.Placement[(k+1)%n].Node, State: "unknown"}
			if l, ok := links[d.FromNode][linkKey{id, k}]; ok {
				d.State, d.Error, d.Bytes, d.Objects = l.State, l.Err, l.Bytes, l.Objects
				d.P50Ms, d.P99Ms = float64(l.P50us)/1000, float64(l.P99us)/1000
			}
			out = append(out, d)
		}
	}
	return out
}
