package catalog

import (
	"fmt"
	"math"

	"github.com/skulk/skulk/internal/control/placement"
)

// Requirements is what placing a whole model on one node needs, from its
// card alone (GET /models/requirements). It performs no placement, download
// or reservation. FootprintBytes is the planner's own estimate
// (placement.RunnerNeed) of the one runner that holds every layer, so it is
// the figure a one-node preview shows at the same window.
type Requirements struct {
	ModelID            string   `json:"model_id"`
	CardDigest         string   `json:"card_digest"`
	ContextTokens      int      `json:"context_tokens"`
	StorageBytes       int64    `json:"storage_bytes"`         // bytes on disk (all files)
	WeightBytes        int64    `json:"weight_bytes"`          // bytes the engine holds: layers + embedding + head
	KVBytesPerToken    int64    `json:"kv_bytes_per_token"`    // K and V over all layers, in the runner's cache type
	KVBytes            int64    `json:"kv_bytes"`              // KVBytesPerToken × ContextTokens
	OverheadBytes      int64    `json:"overhead_bytes"`        // WeightBytes × (placement.OverheadFactor − 1)
	RunnerBytes        int64    `json:"runner_overhead_bytes"` // placement.RunnerOverheadBytes
	FootprintBytes     int64    `json:"footprint_bytes"`       // the sum of the four above
	Layers             int      `json:"layers"`
	CompatibleBackends []string `json:"compatible_backends"`
	Capabilities       []string `json:"capabilities"`
}

// Requirements sizes the model at a context window (0: the card's served
// context, else its context length). A window beyond the card's context
// length is refused.
func (c Card) Requirements(contextTokens int) (Requirements, error) {
	switch {
	case contextTokens < 0:
		return Requirements{}, fmt.Errorf("catalog: model %s: context %d is negative", c.ID, contextTokens)
	case contextTokens == 0 && c.Runtime.ServedContext > 0:
		contextTokens = c.Runtime.ServedContext
	case contextTokens == 0:
		contextTokens = c.ContextLength
	case contextTokens > c.ContextLength:
		return Requirements{}, fmt.Errorf("catalog: model %s: context %d exceeds the model's %d tokens", c.ID, contextTokens, c.ContextLength)
	}
	r := Requirements{
		ModelID: c.ID, CardDigest: c.Digest(), ContextTokens: contextTokens, StorageBytes: c.StorageBytes,
		KVBytesPerToken: c.KVBytesPerToken(), Layers: c.Layers,
		CompatibleBackends: append([]string{}, c.CompatibleBackends...), Capabilities: []string{},
	}
	r.WeightBytes = addSat(c.EmbeddingBytes, c.HeadBytes)
	for _, b := range c.LayerBytes {
		r.WeightBytes = addSat(r.WeightBytes, b)
	}
	need := placement.RunnerNeed(r.WeightBytes, r.KVBytesPerToken, contextTokens)
	r.KVBytes, r.OverheadBytes, r.RunnerBytes, r.FootprintBytes = need.KV, need.Overhead, need.Floor, need.Total
	for _, cp := range c.Capabilities {
		r.Capabilities = append(r.Capabilities, string(cp))
	}
	return r, nil
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
