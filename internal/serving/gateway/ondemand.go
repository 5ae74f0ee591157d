package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
)

// Load on demand, unload when idle, as Ollama does.
//
// A generation for a catalog model without a ready instance places one
// (the command POST /place_instance issues, marked OnDemand with the
// request's keep-alive) and waits until it is ready, bounded by the
// request's context and Config.LoadTimeout. One request of this node
// places a model at a time (placing); the others wait for its instance, as
// does a request that finds an instance of the model still loading.
//
// The node that runs an on-demand instance's first rank unloads it: every
// request of the instance, from whichever node's API, runs there (Serve),
// so that node alone knows when it was last used, and it lives exactly as
// long as the instance (a node lost takes its instances with it, and
// their re-placement, still OnDemand, is watched by its new first rank).
// Its gateway's Run counts the instance's requests in flight and, once
// none has run for the keep-alive of the latest (Request.KeepAlive, or
// the instance's own before its first), deletes the instance. A restarted
// node starts the idle clock of what it runs afresh.

// DefaultLoadTimeout bounds the wait for an on-demand instance to load.
const DefaultLoadTimeout = 10 * time.Minute

// watchEvery is how often a waiter and the idle clock read the State.
const watchEvery = 100 * time.Millisecond

// placing is one on-demand placement of a model by a request of this
// node: done closes once the master answered, with the index of the
// committed placement or err.
type placing struct {
	done  chan struct{}
	index ids.Index
	err   error
}

// use is what this node knows of an on-demand instance it runs the first
// rank of: its requests in flight, when the last ended, and the
// keep-alive the latest asked for (nil: the instance's own).
type use struct {
	inflight  int
	last      time.Time
	keepAlive *time.Duration
	// notBefore holds an instance that has just loaded, and has served
	// nothing yet, for the requests that wait for it (loadGrace).
	notBefore time.Time
}

// loadGrace is how long an on-demand instance that has just become ready
// stays for the requests that placed it, whatever their keep-alive, until
// the first of them ends.
const loadGrace = 30 * time.Second

// ensureReady returns once model has a ready instance, placing one on
// demand when it has none and none is loading.
func (g *Gateway) ensureReady(ctx context.Context, model ids.ModelID, keepAlive time.Duration) error {
	st, err := g.cfg.Master.State(ctx)
	if err != nil {
		return err
	}
	if len(st.ReadyInstancesForModel(model)) > 0 {
		return nil
	}
	limit := g.cfg.LoadTimeout
	if limit <= 0 {
		limit = DefaultLoadTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	placed := false
	lossWaitEnd := time.Now().Add(lossWait)
	for {
		if len(st.ReadyInstancesForModel(model)) > 0 {
			return nil
		}
		if loading(st, model) {
			if st, err = g.nextState(wctx, ctx, model); err != nil {
				return err
			}
			continue
		}
		if placed {
			return loadFailed(st, model)
		}
		if g.lossPending(st) && time.Now().Before(lossWaitEnd) {
			// A node is being handled as lost: the master tears its
			// instances down and places them again, with their own
			// exclusions. Placing here in between would add a second
			// instance, planned as if the node were still there.
			if st, err = g.nextState(wctx, ctx, model); err != nil {
				return err
			}
			continue
		}
		p, owner := g.claim(model)
		if owner {
			p.index, p.err = g.placeOnDemand(wctx, model, keepAlive)
			close(p.done)
		} else {
			select {
			case <-p.done:
			case <-wctx.Done():
				return g.waitErr(ctx, model)
			}
		}
		switch {
		case p.err == nil:
			placed = true
		case !owner && errors.Is(p.err, context.Canceled) && ctx.Err() == nil:
			// The request that placed it left first: try again.
		default:
			g.release(model, p, owner)
			return p.err
		}
		// Wait until this node's State has the placement, so that the next
		// request of this node waits for its instance rather than placing
		// again.
		for p.err == nil && st.LastIndex < p.index {
			if st, err = g.nextState(wctx, ctx, model); err != nil {
				g.release(model, p, owner)
				return err
			}
		}
		g.release(model, p, owner)
		if st, err = g.cfg.Master.State(wctx); err != nil {
			return g.waitErr(ctx, model)
		}
	}
}

// Load returns once model has a ready instance, placing one on demand
// kept idle for keepAlive (nil: Config.KeepAlive). A keepAlive of 0
// instead stops the model's instances placed on demand, wherever they
// run, and reports unloaded (as `ollama stop` asks); explicit placements
// stay, as they stay idle.
func (g *Gateway) Load(ctx context.Context, model string, keepAlive *time.Duration) (bool, error) {
	model, err := g.resolve(model)
	if err != nil {
		return false, err
	}
	ka := g.cfg.KeepAlive
	if keepAlive != nil {
		ka = *keepAlive
	}
	if ka != 0 {
		return false, g.ensureReady(ctx, ids.ModelID(model), ka)
	}
	st, err := g.cfg.Master.State(ctx)
	if err != nil {
		return false, err
	}
	for _, id := range st.InstanceIDs() {
		if inst := st.Instances[id]; inst.Model == ids.ModelID(model) && inst.OnDemand {
			if err := g.DeleteInstance(ctx, id); err != nil && fault.ClassOf(err) != fault.ClassNotFound {
				return false, err
			}
			g.cfg.Logger.Info("unloaded an on-demand instance on request", "instance", id, "model", model)
		}
	}
	return true, nil
}

// claim returns the model's placement in progress, or a new one this
// caller owns.
func (g *Gateway) claim(model ids.ModelID) (*placing, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.placing[model]; ok {
		return p, false
	}
	p := &placing{done: make(chan struct{})}
	g.placing[model] = p
	return p, true
}

// release forgets the owner's placement.
func (g *Gateway) release(model ids.ModelID, p *placing, owner bool) {
	if !owner {
		return
	}
	g.mu.Lock()
	if g.placing[model] == p {
		delete(g.placing, model)
	}
	g.mu.Unlock()
}

// placeOnDemand places model for a request and returns the index of the
// committed placement.
func (g *Gateway) placeOnDemand(ctx context.Context, model ids.ModelID, keepAlive time.Duration) (ids.Index, error) {
	id := ids.CommandID(g.cfg.NewID())
	g.cfg.Logger.Info("placing a model on demand", "model", model, "instance", id.Instance(), "keep_alive", keepAlive)
	evs, err := g.cfg.Master.Execute(ctx, event.PlaceInstance{ID: id, Model: model, OnDemand: true, KeepAliveMs: keepAlive.Milliseconds()})
	if err != nil {
		return 0, err
	}
	var last ids.Index
	for _, e := range evs {
		last = max(last, e.Index)
	}
	return last, nil
}

// lossWait bounds how long a placement on demand waits for a node loss to
// be handled (a cluster without a quorum cannot commit it).
const lossWait = 10 * time.Second

// lossPending reports whether the State still holds a node that the
// membership no longer sees: its loss is being handled.
func (g *Gateway) lossPending(st state.State) bool {
	if g.cfg.Nodes == nil {
		return false
	}
	live := g.cfg.Nodes()
	if len(live) == 0 {
		return false
	}
	alive := aliveSet(live)
	for id := range st.Nodes {
		if !alive[id] {
			return true
		}
	}
	return false
}

// nextState waits a moment and reads the State again.
func (g *Gateway) nextState(wctx, ctx context.Context, model ids.ModelID) (state.State, error) {
	t := time.NewTimer(watchEvery)
	defer t.Stop()
	select {
	case <-t.C:
	case <-wctx.Done():
		return state.State{}, g.waitErr(ctx, model)
	}
	st, err := g.cfg.Master.State(wctx)
	if err != nil {
		return st, g.waitErr(ctx, model)
	}
	return st, nil
}

// waitErr says why a wait for model ended: the client left, or the model
// took longer than the load timeout.
func (g *Gateway) waitErr(ctx context.Context, model ids.ModelID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fault.Errorf(fault.ClassUnavailable, "model %s did not finish loading within %s; it goes on loading: retry in a moment (GET /state shows its instance)", model, g.loadTimeout())
}

func (g *Gateway) loadTimeout() time.Duration {
	if g.cfg.LoadTimeout > 0 {
		return g.cfg.LoadTimeout
	}
	return DefaultLoadTimeout
}

// loading reports whether model has an instance that is loading.
func loading(st state.State, model ids.ModelID) bool {
	for _, inst := range st.Instances {
		if inst.Model == model && inst.Status == state.InstancePending {
			return true
		}
	}
	return false
}

// loadFailed explains why the instance placed for model is gone.
func loadFailed(st state.State, model ids.ModelID) error {
	for i := len(st.Failures) - 1; i >= 0; i-- {
		if f := st.Failures[i]; f.Model == model {
			return fault.Errorf(fault.ClassUnavailable, "model %s could not be loaded: %s (%s)", model, f.Detail, f.Category)
		}
	}
	return fault.Errorf(fault.ClassUnavailable, "model %s was placed on demand but its instance went away before it was ready; retry, or place it with `skulk place %s`", model, model)
}

// Serve runs a task on this node's worker (Config.Local), for a request of
// this node or another's (ServeTask), and counts it for the idle clock of
// on-demand instances.
func (g *Gateway) Serve(ctx context.Context, inst ids.InstanceID, task ids.TaskID, p request.TaskPayload) (<-chan request.Chunk, error) {
	var ka *time.Duration
	if p.Generate != nil {
		ka = p.Generate.KeepAlive
	}
	g.mu.Lock()
	u := g.uses[inst]
	if u == nil {
		u = &use{}
		g.uses[inst] = u
	}
	u.inflight++
	if ka != nil {
		d := *ka
		u.keepAlive = &d
	}
	g.mu.Unlock()
	var once sync.Once
	end := func() {
		once.Do(func() {
			g.mu.Lock()
			u.inflight--
			u.last = g.cfg.Now()
			u.notBefore = time.Time{}
			g.mu.Unlock()
		})
	}
	outer := request.TapFrom(ctx)
	ctx = request.WithTap(ctx, request.Tap{Chunk: outer.Chunk, End: func() { outer.Done(); end() }})
	chunks, err := g.cfg.Local(ctx, inst, task, p)
	if err != nil {
		end()
		return nil, err
	}
	return chunks, nil
}

// Run unloads the on-demand instances whose first rank runs here once
// they have been idle for their keep-alive, until ctx ends.
func (g *Gateway) Run(ctx context.Context) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := g.cfg.Master.State(ctx)
		if err != nil {
			continue
		}
		for _, id := range g.idle(st) {
			if err := g.DeleteInstance(ctx, id); err != nil && ctx.Err() == nil {
				g.cfg.Logger.Warn("could not unload an idle on-demand instance; trying again", "instance", id, "err", err)
				g.mu.Lock()
				if u := g.uses[id]; u != nil && u.inflight == 0 {
					u.last = g.cfg.Now()
				}
				g.mu.Unlock()
				continue
			}
			g.cfg.Logger.Info("unloaded an idle on-demand instance", "instance", id, "model", st.Instances[id].Model)
		}
	}
}

// idle returns the on-demand instances of st this node watches whose
// keep-alive has passed, and forgets the instances st no longer holds.
func (g *Gateway) idle(st state.State) []ids.InstanceID {
	now := g.cfg.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for id := range g.uses {
		if _, ok := st.Instances[id]; !ok {
			delete(g.uses, id)
		}
	}
	var out []ids.InstanceID
	for id, inst := range st.Instances {
		if !inst.OnDemand || inst.Status != state.InstanceReady || len(inst.Placement) == 0 || inst.Placement[0].Node != g.cfg.Node {
			continue
		}
		u := g.uses[id]
		if u == nil {
			// First seen ready: the idle clock starts now, held for the
			// requests that wait for it.
			u = &use{last: now, notBefore: now.Add(loadGrace)}
			g.uses[id] = u
		}
		if u.inflight > 0 || u.last.IsZero() {
			continue
		}
		ka := time.Duration(inst.KeepAliveMs) * time.Millisecond
		if u.keepAlive != nil {
			ka = *u.keepAlive
		}
		if ka >= 0 && !now.Before(u.last.Add(ka)) && !now.Before(u.notBefore) {
			out = append(out, id)
			u.last = time.Time{} // asked once; forgotten with the instance
		}
	}
	return out
}

// Expiries says when this node will unload each on-demand instance it
// watches, if it stays idle (GET /api/ps's expires_at); an instance in use
// or kept forever has none.
func (g *Gateway) Expiries(st state.State) map[ids.InstanceID]time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[ids.InstanceID]time.Time{}
	for id, u := range g.uses {
		inst, ok := st.Instances[id]
		if !ok || !inst.OnDemand || u.inflight > 0 || u.last.IsZero() {
			continue
		}
		ka := time.Duration(inst.KeepAliveMs) * time.Millisecond
		if u.keepAlive != nil {
			ka = *u.keepAlive
		}
		if ka >= 0 {
			at := u.last.Add(ka)
			if at.Before(u.notBefore) {
				at = u.notBefore
			}
			out[id] = at
		}
	}
	return out
}
