package membership

import (
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/skulk/skulk/internal/platform/ids"
)

// rtts keeps the round trip of the latest failure-detector probe to each
// member: memberlist measures it anyway, so link latency costs no traffic.
type rtts struct {
	mu sync.Mutex
	m  map[ids.NodeID]time.Duration
}

func (r *rtts) set(node ids.NodeID, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[ids.NodeID]time.Duration{}
	}
	r.m[node] = d
}

// AckPayload is memberlist's PingDelegate: probes carry nothing extra.
func (d *delegate) AckPayload() []byte { return nil }

// NotifyPingComplete records a probe's round trip.
func (d *delegate) NotifyPingComplete(other *memberlist.Node, rtt time.Duration, _ []byte) {
	d.m().rtt.set(ids.NodeID(other.Name), rtt)
}

// RTTs returns the latest probe round trip to each live member that was
// probed (this node excluded).
func (m *Membership) RTTs() map[ids.NodeID]time.Duration {
	out := map[ids.NodeID]time.Duration{}
	live := map[ids.NodeID]bool{}
	for _, mem := range m.Members() {
		live[mem.Node] = true
	}
	m.rtt.mu.Lock()
	defer m.rtt.mu.Unlock()
	for n, d := range m.rtt.m {
		if live[n] && n != m.self {
			out[n] = d
		}
	}
	return out
}
