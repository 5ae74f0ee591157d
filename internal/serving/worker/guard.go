package worker

import (
	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/observe/telemetry"
)

// MemoryGuard is the worker's pre-spawn memory check (Config.Guard): the shard's stamped
// estimate against a fresh reading, with the planner's tolerance.
func MemoryGuard(cat func() *catalog.Catalog, budget int64) func(inst state.Instance, rank int) (int64, int64, error) {
	return func(inst state.Instance, rank int) (int64, int64, error) {
		card, ok := cat().Get(string(inst.Model))
		if !ok {
			// A stage whose tensors come from a member: this node has no
			// card to estimate with, so it trusts the master's admission.
			return 0, 0, nil
		}
		sh := inst.Placement[rank]
		pm := card.WithCacheType(inst.CacheType).PlacementModel()
		var weights int64
		for l := sh.LayerStart; l < sh.LayerEnd; l++ {
			weights += card.LayerBytes[l]
		}
		if sh.HoldsEmbedding || (sh.HoldsHead && card.TiedEmbeddings) {
			weights += card.EmbeddingBytes
		}
		if sh.HoldsHead {
			weights += card.HeadBytes
		}
		n := placement.RunnerNeed(weights, pm.KVBytesPerTokenLayer*int64(sh.LayerEnd-sh.LayerStart), int(inst.ContextTokens))
		need := n.Total
		mem, err := telemetry.ReadMemory()
		if err != nil {
			return need, 0, nil // no reading: trust the master's admission
		}
		mem = telemetry.Budgeted(mem, budget)
		e := placement.Estimate{Weights: n.Weights, KV: n.KV, Overhead: n.Overhead, Floor: n.Floor, Total: need, Available: mem.AvailableBytes}
		return need, mem.AvailableBytes, placement.FitsNow(e, mem.AvailableBytes)
	}
}
