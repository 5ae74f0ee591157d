package master

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// inputs are the facts outside the State a decision may use; they arrive as
// values so decide stays a pure function.
type inputs struct {
	master ids.NodeID
	nowMs  int64
	card   func(ids.ModelID) (catalog.Card, bool)
	nodes  []placement.Node // current resources of the live nodes
	// maxPerModel bounds one model's instances (0 means the planner's
	// default).
	maxPerModel int
}

// decide turns a command into the events that carry it out, against s.
// It does not apply them; the loop trial-applies before indexing.
func decide(s state.State, cmd event.Command, in inputs) ([]event.Event, error) {
	in.card = Cards(s, in.card)
	switch c := cmd.(type) {
	case event.AddModel:
		return decideAddModel(s, c, in)
	case event.RemoveModel:
		return decideRemoveModel(s, c)
	case event.AddAPIKey:
		return decideAddKey(s, c, in)
	case event.RemoveAPIKey:
		return decideRemoveKey(s, c)
	case event.PlaceInstance:
		return decidePlace(s, c, in)
	case event.CreateInstance:
		card, ok := in.card(c.Model)
		if !ok {
			return nil, unknownModel(c.Model)
		}
		return []event.Event{event.InstanceCreated{
			Instance: c.ID.Instance(), Model: c.Model, Backend: c.Backend, Placement: c.Placement,
			Layers: c.Layers, ContextTokens: c.ContextTokens, ExcludedNodes: c.ExcludedNodes, CreatedAtUnixMs: in.nowMs,
			CacheType: card.Runtime.KVCacheType,
		}}, nil
	case event.DeleteInstance:
		if _, ok := s.Instances[c.Instance]; !ok {
			return nil, fault.Errorf(fault.ClassNotFound, "no instance %s (GET /state lists the placed instances)", c.Instance)
		}
		return []event.Event{event.InstanceDeleted{Instance: c.Instance, Reason: event.DeleteOperator}}, nil
	case event.SetTracingEnabled:
		return []event.Event{event.TracingSet{Enabled: c.Enabled}}, nil
	case event.FailInstance:
		if _, ok := s.Instances[c.Instance]; !ok {
			return nil, nil
		}
		return []event.Event{event.InstanceFailed{Instance: c.Instance, Category: c.Category, Detail: c.Detail, AtUnixMs: in.nowMs}}, nil
	case event.RefuseInstancePlacement:
		return decideRefusal(s, c, in)
	}
	return nil, fault.Errorf(fault.ClassInvalid, "command %s is not handled by the master", cmd.Kind())
}

// Cards looks a model up in local (the node's catalog: built-in, custom and
// installed cards), then in the State's replicated catalog, so a card added
// on any node is known to every master and API node at once.
func Cards(s state.State, local func(ids.ModelID) (catalog.Card, bool)) func(ids.ModelID) (catalog.Card, bool) {
	return func(id ids.ModelID) (catalog.Card, bool) {
		if local != nil {
			if c, ok := local(id); ok {
				return c, true
			}
		}
		w, ok := s.Models[id]
		if !ok {
			return catalog.Card{}, false
		}
		c, err := catalog.FromWire(w)
		return c, err == nil
	}
}

// decideAddModel admits a card into the cluster's catalog. The same card
// again is done already (a retry, or the same file imported on another
// node); another card under a taken id, or the built-in model's id, is a
// conflict.
func decideAddModel(s state.State, c event.AddModel, in inputs) ([]event.Event, error) {
	if _, err := catalog.FromWire(c.Card); err != nil {
		return nil, fault.ParamErrorf("card", "%v", err)
	}
	id := c.Card.ID
	if have, ok := s.Models[id]; ok {
		if event.SameCard(have, c.Card) {
			return nil, nil
		}
		return nil, fault.Errorf(fault.ClassConflict, "model %s already exists in the cluster with another card; remove it first (skulk models rm %s) or choose another id (--id)", id, id)
	}
	if local, ok := in.card(id); ok && local.Builtin {
		return nil, fault.Errorf(fault.ClassConflict, "model %s is built into the binary; choose another id (--id)", id)
	}
	return []event.Event{event.ModelAdded{Card: c.Card}}, nil
}

// decideRemoveModel takes a card out of the cluster's catalog, refused
// while an instance of the model exists.
func decideRemoveModel(s state.State, c event.RemoveModel) ([]event.Event, error) {
	if _, ok := s.Models[c.Model]; !ok {
		return nil, fault.Errorf(fault.ClassNotFound, "model %s is not in the cluster's catalog", c.Model)
	}
	var used []string
	for id, inst := range s.Instances {
		if inst.Model == c.Model {
			used = append(used, string(id))
		}
	}
	if len(used) > 0 {
		sort.Strings(used)
		return nil, fault.Errorf(fault.ClassConflict, "model %s is used by instance %s; stop it first (skulk stop %s)", c.Model, strings.Join(used, ", "), used[0])
	}
	return []event.Event{event.ModelRemoved{Model: c.Model}}, nil
}

func unknownModel(m ids.ModelID) error {
	return fault.Errorf(fault.ClassNotFound, "unknown model %s (GET /models lists the catalog)", fault.Quote(string(m)))
}

func decidePlace(s state.State, c event.PlaceInstance, in inputs) ([]event.Event, error) {
	card, ok := in.card(c.Model)
	if !ok {
		return nil, unknownModel(c.Model)
	}
	req := placement.Request{Model: card.ID, MinNodes: int(c.MinNodes), Context: int(c.ContextTokens), Sharding: placement.ShardingPipeline}
	for _, n := range c.ExcludedNodes {
		req.Excluded = append(req.Excluded, string(n))
	}
	if err := placement.AdmitModel(card.ID, instancesOf(s, c.Model), in.maxPerModel); err != nil {
		return nil, err
	}
	card = card.WithCacheType(c.CacheType)
	if d := c.DraftModel; d != "" {
		draft, ok := in.card(d)
		switch {
		case !ok:
			return nil, fault.ParamErrorf("draft_model", "draft model %s is not in the catalog (GET /models lists it)", d)
		case d == c.Model:
			return nil, fault.ParamErrorf("draft_model", "a model cannot draft for itself")
		case draft.VocabSize != 0 && card.VocabSize != 0 && draft.VocabSize != card.VocabSize:
			return nil, fault.ParamErrorf("draft_model", "draft model %s has %d tokens and %s %d: a draft needs the same vocabulary", d, draft.VocabSize, c.Model, card.VocabSize)
		}
	}
	if t := card.Runtime.KVCacheType; t == placement.KVCacheQ8_0 || t == placement.KVCacheQ4_0 {
		switch {
		case card.HeadDim%32 != 0:
			return nil, fault.ParamErrorf("cache_type", "model %s has head_dim %d, not a whole number of the %s cache's 32-element blocks; use f16 or f32", card.ID, card.HeadDim, t)
		case card.ValueDim%32 != 0:
			return nil, fault.ParamErrorf("cache_type", "model %s has value_dim %d, not a whole number of the %s cache's 32-element blocks; use f16 or f32", card.ID, card.ValueDim, t)
		}
	}
	p, err := placement.Plan(card.PlacementModel(), admitted(s, in, ""), req)
	if err != nil {
		return nil, err
	}
	ev := instanceCreated(c.ID.Instance(), c.Model, p, c.ExcludedNodes, 0, in.nowMs)
	ev.CacheType, ev.Speculative, ev.DraftModel = card.Runtime.KVCacheType, c.Speculative, c.DraftModel
	ev.OnDemand, ev.KeepAliveMs = c.OnDemand, c.KeepAliveMs
	return []event.Event{ev}, nil
}

func instanceCreated(id ids.InstanceID, model ids.ModelID, p placement.Placement, excluded []ids.NodeID, hops uint8, nowMs int64) event.InstanceCreated {
	shards := make([]event.Shard, len(p.Ranks))
	layers := 0
	for i, r := range p.Ranks {
		shards[i] = event.Shard{Node: ids.NodeID(r.Node), LayerStart: uint32(r.Start), LayerEnd: uint32(r.End),
			HoldsEmbedding: r.HoldsEmbedding, HoldsHead: r.HoldsHead}
		layers = r.End
	}
	return event.InstanceCreated{
		Instance: id, Model: model, Backend: event.Backend(p.Backend), Placement: shards, Layers: uint32(layers),
		ContextTokens: uint32(p.ContextWindow), ExcludedNodes: excluded, RefusalHops: hops, CreatedAtUnixMs: nowMs,
	}
}

// decideRefusal re-places an instance one node wider without the node that
// refused it, or gives up after two hops.
func decideRefusal(s state.State, c event.RefuseInstancePlacement, in inputs) ([]event.Event, error) {
	inst, ok := s.Instances[c.Instance]
	if !ok {
		return nil, nil
	}
	card, ok := in.card(inst.Model)
	if !ok {
		return nil, unknownModel(inst.Model)
	}
	prev := placement.Placement{Model: card.ID, Backend: string(inst.Backend), ContextWindow: int(inst.ContextTokens),
		Request: placement.Request{Model: card.ID, Context: int(inst.ContextTokens), Sharding: placement.ShardingPipeline}}
	for _, sh := range inst.Placement {
		prev.Ranks = append(prev.Ranks, placement.Rank{Node: string(sh.Node), Start: int(sh.LayerStart), End: int(sh.LayerEnd),
			HoldsEmbedding: sh.HoldsEmbedding, HoldsHead: sh.HoldsHead})
	}
	for _, n := range inst.ExcludedNodes {
		prev.Request.Excluded = append(prev.Request.Excluded, string(n))
	}
	var evs []event.Event
	// The instance's own ranks are not charged: the re-placement replaces
	// them in the same batch.
	card = card.WithCacheType(inst.CacheType)
	p, err := placement.Widen(card.PlacementModel(), admitted(s, in, c.Instance), prev, string(c.Node), int(inst.RefusalHops))
	if err != nil {
		var limit *placement.RefusalLimitError
		detail := fmt.Sprintf("node %s refused the placement (needs %d bytes, %d available): %v", c.Node, c.NeededBytes, c.AvailableBytes, err)
		if errors.As(err, &limit) || err != nil {
			return append(evs, event.InstanceFailed{Instance: c.Instance, Category: event.FailureOutOfMemory, Detail: truncate(detail), AtUnixMs: in.nowMs}), nil
		}
	}
	excluded := append(append([]ids.NodeID(nil), inst.ExcludedNodes...), c.Node)
	evs = append(evs, event.InstanceDeleted{Instance: c.Instance, Reason: event.DeleteRefused})
	// The re-placement keeps the instance id: clients and operators follow it.
	ev := instanceCreated(c.Instance, inst.Model, p, excluded, inst.RefusalHops+1, in.nowMs)
	ev.CacheType, ev.Speculative, ev.DraftModel = inst.CacheType, inst.Speculative, inst.DraftModel
	ev.OnDemand, ev.KeepAliveMs = inst.OnDemand, inst.KeepAliveMs
	return append(evs, ev), nil
}

func truncate(s string) string {
	if len(s) > event.MaxReasonBytes {
		return s[:event.MaxReasonBytes]
	}
	return s
}

// admitted keeps the live nodes the State has admitted (a member the master
// has not yet recorded with NodeJoined cannot hold a rank), charged with
// what the State already places on them except the ranks of instance skip.
func admitted(s state.State, in inputs, skip ids.InstanceID) []placement.Node {
	var out []placement.Node
	for _, n := range in.nodes {
		if _, ok := s.Nodes[ids.NodeID(n.ID)]; ok {
			out = append(out, n)
		}
	}
	return placement.Charged(out, catalog.Running(s, in.card, skip))
}

// instancesOf counts the instances of model that still run.
func instancesOf(s state.State, model ids.ModelID) int {
	n := 0
	for _, inst := range s.Instances {
		if inst.Model == model && inst.Status != state.InstanceFailed {
			n++
		}
	}
	return n
}
