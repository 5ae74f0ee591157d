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
	Floor     int64  `json:"floor"`    // FloorBytes
	Total     int64  `json:"total"`    // the sum of the four above
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

// fixedBytes is a node's need before KV: its weights with overhead, plus the
// floor.
func fixedBytes(weights int64) int64 {
	return addSat(addSat(weights, percentOf(weights, overheadPercent)), FloorBytes)
}

func estimate(n Node, weights, kvPerToken int64, window int) Estimate {
	e := Estimate{
		Node:      n.ID,
		Weights:   weights,
		KV:        mulSat(kvPerToken, int64(window)),
		Overhead:  percentOf(weights, overheadPercent),
		Floor:     FloorBytes,
		Available: n.headroom(),
		Reported:  n.AvailableBytes,
		Memory:    n.TotalBytes,
		Committed: n.CommittedBytes,
		Runners:   n.Runners,
	}
	e.Total = addSat(addSat(addSat(e.Weights, e.Overhead), e.Floor), e.KV)
	return e
}

// rankWeights is the weight bytes rank r holds: its layers, plus the
// embedding and the head when it holds them.
func rankWeights(s shape, r Rank) int64 {
	w := s.cum[r.End] - s.cum[r.Start]
	if r.HoldsEmbedding {
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
	kv := mulSat(mulSat(s.KVBytesPerTokenLayer, int64(r.End-r.Start)), int64(window))
	return addSat(fixedBytes(rankWeights(s, r)), kv), nil
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
