package placement

import (
	"fmt"
	"math"
)

// Estimate is one node's admission arithmetic: what its shard needs, in
// parts, against what it has.
type Estimate struct {
	Node      string `json:"node"`
	Weights   int64  `json:"weights"`  // layer weights plus any embedding and head it holds
	KV        int64  `json:"kv"`       // KV cache for its layers at the window
	Overhead  int64  `json:"overhead"` // Weights × (OverheadFactor − 1)
	Floor     int64  `json:"floor"`    // RunnerOverheadBytes: the runner process itself
	Total     int64  `json:"total"`    // the sum of the four above: RunnerNeed
	Available int64  `json:"available"`

	// Available is the lesser of Reported and Memory − Committed (see
	// Node.headroom); these say which bound it.
	Reported  int64 `json:"reported_available"` // free memory per the node's telemetry
	Memory    int64 `json:"total_memory"`       // the node's whole memory, 0 when not reported
	Committed int64 `json:"committed"`          // charged for the runners already placed on the node
	Runners   int   `json:"runners"`            // how many runners that is
}

// Fits reports the admission rule: need strictly below what is available,
// because an exact fit thrashes rather than runs.
func (e Estimate) Fits() bool { return e.Total < e.Available }

// KVBytesPerTokenLayer is the KV cache one runner allocates for one token of
// window in one layer: K and V, each n_kv_heads × head_dim elements of the
// cache's type (cacheType "" or KVCacheF16: 2 bytes, the runner's default;
// KVCacheF32: 4; KVCacheQ8_0 and KVCacheQ4_0: 34 and 18 bytes per block of
// 32 elements of a head, a partial block counted whole). Non-positive
// geometry gives 0 (no KV to size).
func KVBytesPerTokenLayer(kvHeads, headDim int, cacheType string) int64 {
	if kvHeads <= 0 || headDim <= 0 {
		return 0
	}
	var head int64 // bytes of one head's K (or V) for one token
	switch cacheType {
	case KVCacheF32:
		head = mulSat(4, int64(headDim))
	case KVCacheQ8_0, KVCacheQ4_0:
		block := int64(34)
		if cacheType == KVCacheQ4_0 {
			block = 18
		}
		head = mulSat(block, (int64(headDim)+31)/32)
	default:
		head = mulSat(2, int64(headDim))
	}
	return mulSat(mulSat(2, int64(kvHeads)), head)
}

// KnownKVCacheType reports whether t names a KV cache type ("" is the
// default).
func KnownKVCacheType(t string) bool {
	switch t {
	case "", KVCacheF16, KVCacheF32, KVCacheQ8_0, KVCacheQ4_0:
		return true
	}
	return false
}

// Need is the memory one runner needs, in parts: the one estimate behind
// placement admission, Charge, the previews, the worker's pre-spawn check
// and GET /models/requirements.
type Need struct {
	Weights  int64 // the weight bytes the runner holds
	Overhead int64 // Weights × (OverheadFactor − 1): engine scratch space
	Floor    int64 // RunnerOverheadBytes: the process itself
	KV       int64 // kvPerToken × window
	Total    int64 // the sum of the four
}

// RunnerNeed is the estimate of one runner holding weights bytes of weights
// with kvPerToken bytes of KV cache per token (KVBytesPerTokenLayer × its
// layers) at a window of tokens:
//
//	weights × OverheadFactor + RunnerOverheadBytes + kvPerToken × window
func RunnerNeed(weights, kvPerToken int64, window int) Need {
	n := Need{
		Weights:  weights,
		Overhead: percentOf(max(weights, 0), overheadPercent),
		Floor:    RunnerOverheadBytes,
		KV:       mulSat(max(kvPerToken, 0), int64(max(window, 0))),
	}
	n.Total = addSat(addSat(addSat(n.Weights, n.Overhead), n.Floor), n.KV)
	return n
}

// fixedBytes is a runner's need before KV: its weights with overhead, plus
// the runner overhead.
func fixedBytes(weights int64) int64 { return RunnerNeed(weights, 0, 0).Total }

func estimate(n Node, weights, kvPerToken int64, window int) Estimate {
	need := RunnerNeed(weights, kvPerToken, window)
	return Estimate{
		Node:      n.ID,
		Weights:   need.Weights,
		KV:        need.KV,
		Overhead:  need.Overhead,
		Floor:     need.Floor,
		Total:     need.Total,
		Available: n.headroom(),
		Reported:  n.AvailableBytes,
		Memory:    n.TotalBytes,
		Committed: n.CommittedBytes,
		Runners:   n.Runners,
	}
}

// rankWeights is the weight bytes rank r holds: its layers, plus the
// embedding and the head when it holds them (and the embedding too when it
// holds a head tied to it, as the runner loads it for the output matrix).
func rankWeights(s shape, r Rank) int64 {
	w := s.cum[r.End] - s.cum[r.Start]
	if r.HoldsEmbedding || (r.HoldsHead && s.TiedEmbedding) {
		w = addSat(w, s.EmbeddingBytes)
	}
	if r.HoldsHead {
		w = addSat(w, s.HeadBytes)
	}
	return w
}

// Charge is what the planner charged rank r of an instance of m placed with
// this window: the estimate's Total when Plan admitted it. Callers sum it
// over the ranks the State places on a node into Node.CommittedBytes, so a
// placed runner is counted whether or not telemetry has seen it allocate.
func Charge(m Model, r Rank, window int) (int64, error) {
	s, err := checkModel(m)
	if err != nil {
		return 0, err
	}
	switch {
	case r.Start < 0 || r.End > s.Layers || r.Start >= r.End:
		return 0, &InvalidRequestError{Field: "rank", Reason: fmt.Sprintf("layers [%d, %d) are not a range of the %d-layer model %q", r.Start, r.End, s.Layers, s.ID)}
	case window < 0:
		return 0, &InvalidRequestError{Field: "context_tokens", Reason: fmt.Sprintf("%d is negative", window)}
	}
	return RunnerNeed(rankWeights(s, r), mulSat(s.KVBytesPerTokenLayer, int64(r.End-r.Start)), window).Total, nil
}

// tokenCeiling is the largest window whose KV fits beside fixed bytes
// strictly below available, or -1 when even the fixed bytes do not fit.
// A model without KV geometry has no memory-derived ceiling.
func tokenCeiling(available, fixed, kvPerToken int64) int64 {
	room := available - 1 - fixed // the most KV may take and still fit strictly
	switch {
	case room < 0:
		return -1
	case kvPerToken == 0:
		return math.MaxInt64
	}
	return room / kvPerToken
}

// FitsNow is the worker's pre-spawn check: it accepts the stamped estimate
// unless it exceeds the node's live available memory by more than
// FitTolerance of that memory. The master admitted on gossiped readings; a
// small miss against a fresh one is jitter, a large one means the node has
// lost memory since and the shard should be re-placed (see Widen).
func FitsNow(e Estimate, availableNow int64) error {
	tolerance := percentOf(max(availableNow, 0), tolerancePercent)
	if e.Total <= addSat(max(availableNow, 0), tolerance) {
		return nil
	}
	return &FitError{Node: e.Node, Need: e.Total, AvailableNow: availableNow, Tolerance: tolerance}
}
