package pipeline

import "github.com/skulk/skulk/internal/engine/sequence"

// item is one sequence's pending work at a stage: what one entry of a
// received object asks for, or (on rank 0) an admitted prompt's chunk or a
// returned token to feed.
type item struct {
	kind   Kind
	seq    uint64
	pos    int       // the cache position of the first row
	rows   int       // positions (prefill n, decode 1)
	tokens []int32   // rank 0: the ids to embed
	hidden []float32 // other ranks: rows × width hidden values
	spec   Spec      // open
	// timings are the earlier ranks' timings a traced sequence's release
	// carries.
	timings []sequence.RankTiming
	// group is the micro-batch a decode step belongs to: on ranks after
	// the first, the number of the object it arrived in; 0 on rank 0,
	// which forms the micro-batches.
	group uint64
}

// batch is what a stage computes next: one control item (open, release),
// one prefill chunk, or one decode step of several sequences. idx are
// indices into the pending items, in their order.
type batch struct {
	kind Kind
	idx  []int
}

// plan picks a stage's next batch from its pending items, oldest first.
// It is a pure function of its arguments.
//
// A sequence's items run in arrival order: an item is eligible only when no
// earlier pending item is of the same sequence. The first eligible open or
// release runs at once (no compute; a release frees memory). Otherwise the
// eligible decode steps of the oldest one's group, oldest first and at
// most decodeCap of them, run together as one step, unless the last batch
// was a decode step and a prefill chunk is eligible: then the oldest
// eligible chunk runs, so that decoding sequences cannot starve a prompt,
// nor a long prompt stall every decoding sequence for more than one chunk.
// A decode step of fewer than decodeMin sequences waits (a prefill chunk
// may run meanwhile): rank 0 holds a short micro-batch back while enough
// others keep the ranks busy, so that it grows (see headDecodeMin).
//
// Keeping to one group is what keeps the stages overlapping: a rank that
// merged the micro-batches queued before it (the slowest rank, or one
// whose core was taken for a moment) would send them on, and back to rank
// 0, as one; rank 0 would split them again, but meanwhile every other rank
// idles, and they merge again at the next hiccup.
func plan(pending []item, lastDecode bool, decodeCap, decodeMin int) batch {
	decodeCap = max(decodeCap, 1)
	var (
		decode  []int
		prefill = -1
		seen    = make([]uint64, 0, len(pending))
	)
	for i, it := range pending {
		dup := false
		for _, s := range seen {
			if s == it.seq {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		seen = append(seen, it.seq)
		switch it.kind {
		case KindOpen, KindRelease:
			return batch{kind: it.kind, idx: []int{i}}
		case KindPrefill:
			if prefill < 0 {
				prefill = i
			}
		case KindDecode:
			if len(decode) < decodeCap && (len(decode) == 0 || it.group == pending[decode[0]].group) {
				decode = append(decode, i)
			}
		}
	}
	if len(decode) < min(decodeMin, decodeCap) {
		decode = nil
	}
	switch {
	case len(decode) > 0 && (prefill < 0 || !lastDecode):
		return batch{kind: KindDecode, idx: decode}
	case prefill >= 0:
		return batch{kind: KindPrefill, idx: []int{prefill}}
	}
	return batch{}
}

// headDecodeCap is how many decode steps rank 0 runs in one step: the live
// sequences spread over as many micro-batches as there are ranks, so that
// while rank 1 computes one group, rank 0 computes the next, instead of
// every rank but one waiting on a single batch of all of them.
func headDecodeCap(live, ranks, maxBatch int) int {
	ranks = max(ranks, 1)
	return max(1, min(maxBatch, (live+ranks-1)/ranks))
}

// headDecodeMin is the fewest decode steps rank 0 runs as one micro-batch:
// any number while fewer micro-batches than ranks are in flight (a rank
// would idle), else a full one (headDecodeCap). Without it, sequences that
// came out of their prefills one by one would go round as micro-batches of
// one each for good: rank 0, faster than the last rank, finds each token
// alone and steps it at once, and every rank pays a step's fixed cost per
// sequence.
func headDecodeMin(inFlight, ranks, decodeCap int) int {
	if inFlight < ranks {
		return 1
	}
	return decodeCap
}

// chunks cuts a prompt into prefill items of at most size tokens each,
// starting at position 0.
func chunks(seq uint64, prompt []int32, size int) []item {
	size = max(size, 1)
	var out []item
	for pos := 0; pos < len(prompt); pos += size {
		end := min(pos+size, len(prompt))
		out = append(out, item{kind: KindPrefill, seq: seq, pos: pos, rows: end - pos, tokens: prompt[pos:end]})
	}
	return out
}

// without returns pending minus the items at idx (ascending), keeping the
// order of the rest; it reuses pending's array.
func without(pending []item, idx []int) []item {
	out := pending[:0]
	k := 0
	for i, it := range pending {
		if k < len(idx) && idx[k] == i {
			k++
			continue
		}
		out = append(out, it)
	}
	clear(pending[len(out):])
	return out
}

// dropSeq returns pending without any item of seq.
func dropSeq(pending []item, seq uint64) []item {
	out := pending[:0]
	for _, it := range pending {
		if it.seq != seq {
			out = append(out, it)
		}
	}
	clear(pending[len(out):])
	return out
}
