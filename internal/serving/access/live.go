package access

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/platform/ids"
)

// accessRefresh is how often the API's key ring is rebuilt from the State:
// it bounds how long a key added or removed on one member takes to be
// enforced on the others.
const accessRefresh = 500 * time.Millisecond

// Live keeps the API's access policy current. It owns the policy: one
// goroutine (run) rebuilds it from this node's configured keys and the keys
// every member reported into the State, and reports this node's own keys
// when the State does not hold them yet. Requests read it without locking.
type Live struct {
	self   ids.NodeID
	own    []Key
	hasher Hasher
	open   bool
	state  func(context.Context) (state.State, error)
	report func(context.Context, event.Event) error
	log    *slog.Logger
	cur    atomic.Pointer[Policy]
	// nudge asks Run to rebuild the policy now rather than at its next
	// tick (a key was just added or removed through this node).
	nudge chan struct{}
}

// NewLive returns the policy of this node's own keys (own, digested with
// h) until Run reads the cluster's; open is --api-open. st reads the
// State and report reports this node's keys to the master.
func NewLive(self ids.NodeID, own []Key, h Hasher, open bool,
	st func(context.Context) (state.State, error), report func(context.Context, event.Event) error, log *slog.Logger) *Live {
	a := &Live{self: self, own: own, hasher: h, open: open, state: st, report: report, log: log, nudge: make(chan struct{}, 1)}
	a.set(state.State{})
	return a
}

// Refresh asks Run to rebuild the policy from the State now; it does not
// wait.
func (a *Live) Refresh() {
	select {
	case a.nudge <- struct{}{}:
	default:
	}
}

// Policy is the policy in force now.
func (a *Live) Policy() Policy { return *a.cur.Load() }

func (a *Live) set(st state.State) {
	p := Policy{Ring: StateRing(a.hasher, a.own, st), Open: a.open}
	if prev := a.cur.Load(); prev != nil && prev.Ring.Len() != p.Ring.Len() {
		a.log.Info("API keys in force changed", "keys", p.Ring.Len())
	}
	a.cur.Store(&p)
}

// Run refreshes the policy until ctx ends.
func (a *Live) Run(ctx context.Context) {
	want := a.hasher.Entries(a.own)
	var lastReport time.Time
	t := time.NewTicker(accessRefresh)
	defer t.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := a.state(sctx)
		cancel()
		if err == nil {
			a.set(st)
			if !slices.Equal(st.APIKeys[a.self], want) && time.Since(lastReport) > 2*time.Second {
				lastReport = time.Now()
				rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if err := a.report(rctx, event.APIKeysSet{Node: a.self, Keys: want}); err != nil && ctx.Err() == nil {
					a.log.Debug("reporting this node's API keys to the master failed; retrying", "err", err)
				}
				cancel()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.nudge:
		}
	}
}

// LogExposure says at start who the API serves, so that an open API is
// never a surprise.
func LogExposure(log *slog.Logger, cfg config.Node, keys int, addr net.Addr) {
	loopbackOnly := false
	if ap, err := netip.ParseAddrPort(addr.String()); err == nil {
		loopbackOnly = ap.Addr().Unmap().IsLoopback()
	}
	switch {
	case keys > 0 && cfg.APIOpen:
		log.Info("--api-open has no effect while API keys are set: every request needs a key")
	case keys > 0:
		log.Info("API keys set: every request needs a key; the admin routes need the admin key", "keys", keys)
	case cfg.APIOpen:
		log.Warn("API open (--api-open): any client that reaches " + addr.String() + " can run, place and delete models without a key, unless a member of the cluster sets one; set SKULK_API_KEY to protect it")
	case !loopbackOnly:
		log.Info("the API serves loopback clients only until an API key is set in the cluster (SKULK_API_KEY) or the node is started with --api-open")
	}
	if cfg.MetricsPublic {
		log.Info("metrics public (--metrics-public): GET /metrics is served to every address without a key; the other routes keep their keys")
	}
}
