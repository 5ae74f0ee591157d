package membership

import (
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"

	"github.com/skulk/skulk/internal/platform/ids"
)

// delegate is Membership seen as memberlist's Delegate, EventDelegate,
// AliveDelegate and MergeDelegate. memberlist calls these on its own
// goroutines; none of them blocks beyond a mutex.
type delegate Membership

var (
	_ memberlist.Delegate      = (*delegate)(nil)
	_ memberlist.EventDelegate = (*delegate)(nil)
	_ memberlist.AliveDelegate = (*delegate)(nil)
	_ memberlist.MergeDelegate = (*delegate)(nil)
)

func (d *delegate) m() *Membership { return (*Membership)(d) }

// NodeMeta returns the encoded local meta (checked against the limit at
// New and UpdateMeta).
func (d *delegate) NodeMeta(limit int) []byte {
	m := d.m()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.meta) > limit {
		return nil
	}
	return m.meta
}

// NotifyMsg receives gossip user messages: telemetry readings. A reading
// that is newer than ours is stored and gossiped on, so it spreads
// epidemically; LWW makes the spread stop.
func (d *delegate) NotifyMsg(b []byte) {
	if len(b) > 1 && b[0] == msgLeaving {
		m := d.m()
		m.mu.Lock()
		if node := ids.NodeID(b[1:]); node.Validate() == nil && len(m.leaving) < 4096 {
			m.leaving[node] = true
		}
		m.mu.Unlock()
		return
	}
	if len(b) == 0 || b[0] != msgReading {
		return
	}
	dec := decoder{b: b[1:]}
	r := dec.reading()
	if dec.err != nil || len(dec.b) != 0 || r.check() != nil {
		return
	}
	if ok, _ := d.tel.admit(r); ok {
		d.bq.QueueBroadcast(newReadingBroadcast(r))
	}
}

func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.bq.GetBroadcasts(overhead, limit)
}

// LocalState is the telemetry map for push/pull.
func (d *delegate) LocalState(join bool) []byte { return d.tel.encodeState() }

// MergeRemoteState admits a peer's telemetry map.
func (d *delegate) MergeRemoteState(buf []byte, join bool) {
	rs, err := decodeState(buf)
	if err != nil {
		d.log.Debug("membership: ignoring remote telemetry state", "err", err)
		return
	}
	for _, r := range rs {
		if r.check() == nil {
			d.tel.admit(r)
		}
	}
}

// checkNode refuses a node whose meta does not decode, names another node,
// or speaks another network version.
func (d *delegate) checkNode(n *memberlist.Node) (Meta, error) {
	meta, err := DecodeMeta(n.Meta)
	if err != nil {
		return Meta{}, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if string(meta.Node) != n.Name {
		return Meta{}, fmt.Errorf("node %s gossips meta for %s", n.Name, meta.Node)
	}
	if meta.NetworkVersion != d.cfg.Meta.NetworkVersion {
		return Meta{}, fmt.Errorf("node %s speaks network version %q, we speak %q", n.Name, meta.NetworkVersion, d.cfg.Meta.NetworkVersion)
	}
	return meta, nil
}

// NotifyAlive keeps nodes with bad meta out of the member list.
func (d *delegate) NotifyAlive(n *memberlist.Node) error {
	_, err := d.checkNode(n)
	return err
}

// NotifyMerge refuses a push/pull join with a cluster that holds a node we
// would refuse.
func (d *delegate) NotifyMerge(peers []*memberlist.Node) error {
	var errs []error
	for _, n := range peers {
		if _, err := d.checkNode(n); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		d.log.Warn("membership: refusing to merge with a cluster", "err", err)
		return err
	}
	return nil
}

func (d *delegate) NotifyJoin(n *memberlist.Node)   { d.upsert(n, EventJoin) }
func (d *delegate) NotifyUpdate(n *memberlist.Node) { d.upsert(n, EventUpdate) }

func (d *delegate) upsert(n *memberlist.Node, kind EventKind) {
	meta, err := d.checkNode(n)
	if err != nil { // NotifyAlive refused it; be safe anyway
		return
	}
	node := ids.NodeID(n.Name)
	mb := Member{Node: node, Meta: meta, Gossip: gossipAddr(n)}
	m := d.m()
	m.mu.Lock()
	m.members[node] = mb
	if kind == EventJoin {
		delete(m.leaving, node)
	}
	m.mu.Unlock()
	d.tel.setMember(node, true)
	if node != d.self {
		m.enqueue(Event{Kind: kind, Node: node, Meta: meta, Gossip: mb.Gossip})
	}
}

// NotifyLeave reports a graceful leave (StateLeft) or a failure (dead).
func (d *delegate) NotifyLeave(n *memberlist.Node) {
	node := ids.NodeID(n.Name)
	m := d.m()
	m.mu.Lock()
	mb, known := m.members[node]
	delete(m.members, node)
	left := m.leaving[node]
	delete(m.leaving, node)
	m.mu.Unlock()
	d.tel.setMember(node, false)
	if !known || node == d.self {
		return
	}
	// memberlist's Node.State is not set on this path (nodeState shadows
	// it), so the leave notice is what tells a leave from a failure.
	kind := EventFailed
	if left {
		kind = EventLeave
	}
	m.enqueue(Event{Kind: kind, Node: node, Meta: mb.Meta, Gossip: mb.Gossip})
}
