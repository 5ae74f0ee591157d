package placement

import (
	"math/big"
	"sort"
)

// split cuts the model's layers into len(capacity) contiguous ranges, one
// per node in order, and returns the boundaries: rank r holds layers
// [bounds[r], bounds[r+1]). Each rank's share of the work tracks its share
// of the capacity (the memory a node has for layers, or the node's size):
// the work is the
// layer bytes each token reads, and tail more on the last rank (the output
// head it reads every token, and sampling over its rows), so the last rank
// takes fewer layers and no stage waits on it. Every rank gets at least
// one layer, and ties go to the earlier boundary, so the same inputs
// always give the same cut. len(capacity) must be in [1, layers].
func split(cum []int64, capacity []int64, tail int64) []int {
	layers, ranks := len(cum)-1, len(capacity)
	weights := cum
	if cum[layers] == 0 {
		// Weightless layers (a card without sizes): split by count instead.
		weights = make([]int64, layers+1)
		for i := range weights {
			weights[i] = int64(i)
		}
		tail = 0
	}
	work := big.NewInt(weights[layers])
	work.Add(work, big.NewInt(max(tail, 0)))
	capacity = positive(capacity)
	total := new(big.Int)
	for _, c := range capacity {
		total.Add(total, big.NewInt(c))
	}

	bounds := make([]int, ranks+1)
	bounds[ranks] = layers
	prefix := new(big.Int)
	for r := 1; r < ranks; r++ {
		prefix.Add(prefix, big.NewInt(capacity[r-1]))
		// The ideal cumulative byte count at this boundary, exactly.
		target := new(big.Int).Mul(work, prefix)
		target.Quo(target, total)
		lo, hi := bounds[r-1]+1, layers-(ranks-r) // leave one layer for each later rank
		bounds[r] = nearest(weights, target.Int64(), lo, hi)
	}
	return bounds
}

// nearest returns the k in [lo, hi] whose cum[k] is closest to target,
// preferring the smaller k on a tie. cum is non-decreasing.
func nearest(cum []int64, target int64, lo, hi int) int {
	k := lo + sort.Search(hi-lo+1, func(i int) bool { return cum[lo+i] >= target })
	switch {
	case k > hi:
		return hi
	case k > lo && target-cum[k-1] <= cum[k]-target:
		return k - 1
	}
	return k
}

// positive returns capacities with no zero or negative entry: a node with no
// room left still gets its minimum share (and then fails admission with the
// arithmetic), and an all-zero set splits evenly.
func positive(capacity []int64) []int64 {
	out := make([]int64, len(capacity))
	for i, c := range capacity {
		out[i] = max(c, 1)
	}
	return out
}
