package catalog

import (
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
)

// PlacementModel converts the card into the planner's input.
func (c Card) PlacementModel() placement.Model {
	return placement.Model{
		ID: c.ID, Layers: c.Layers, LayerBytes: c.LayerBytes, EmbeddingBytes: c.EmbeddingBytes,
		HeadBytes: c.HeadBytes, TiedEmbedding: c.TiedEmbeddings,
		KVBytesPerTokenLayer: c.KVBytesPerTokenLayer(),
		ContextLength:        c.ContextLength, CompatibleBackends: c.CompatibleBackends, BackendPreference: c.BackendPreference,
	}
}

// Running lists the ranks the State places, for placement.Charged, each
// with its model as card finds it in the instance's cache type. A failed
// instance's runners are stopped, so it is left out; so is instance skip
// (pass "" to keep every instance). The master's planner and the API's
// previews charge nodes with it alike, so a preview sees what the planner
// sees.
func Running(s state.State, card func(ids.ModelID) (Card, bool), skip ids.InstanceID) []placement.Running {
	var out []placement.Running
	for id, inst := range s.Instances { // Charged's sums do not depend on the order
		if id == skip || inst.Status == state.InstanceFailed {
			continue
		}
		var model *placement.Model
		if c, ok := card(inst.Model); ok {
			m := c.WithCacheType(inst.CacheType).PlacementModel()
			model = &m
		}
		for _, sh := range inst.Placement {
			out = append(out, placement.Running{Node: string(sh.Node), ModelID: string(inst.Model), Model: model, Context: int(inst.ContextTokens),
				Rank: placement.Rank{Start: int(sh.LayerStart), End: int(sh.LayerEnd), HoldsEmbedding: sh.HoldsEmbedding, HoldsHead: sh.HoldsHead}})
		}
	}
	return out
}
