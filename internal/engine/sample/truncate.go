package sample

import (
	"math"
	"math/bits"
	"slices"
)

// better is the candidate order: higher logit first, lower id on ties. It is
// a strict total order, so "the best k" is always one well-defined set.
func better(a, b candidate) bool {
	return a.logit > b.logit || (a.logit == b.logit && a.id < b.id)
}

func cmpCandidates(a, b candidate) int {
	switch {
	case better(a, b):
		return -1
	case better(b, a):
		return 1
	}
	return 0
}

// topN arranges c so that c[:want] are the best want candidates in order,
// given that c[:have] already are. It selects before sorting so a small k
// over a large vocabulary costs O(n), not O(n log n).
func topN(c []candidate, have, want int) {
	if want > len(c) {
		want = len(c)
	}
	if want <= have {
		return
	}
	selectBest(c[have:], want-have)
	slices.SortFunc(c[have:want], cmpCandidates)
}

// selectBest moves the k best candidates of c into c[:k], in no order
// (quickselect; falls back to a sort if the pivots keep landing badly).
func selectBest(c []candidate, k int) {
	lo, hi := 0, len(c)
	budget := 2*bits.Len(uint(len(c))) + 8
	for hi-lo > 1 && k > lo && k < hi {
		if budget == 0 {
			slices.SortFunc(c[lo:hi], cmpCandidates)
			return
		}
		budget--
		p := partition(c[lo:hi]) + lo
		switch {
		case k <= p:
			hi = p
		default:
			lo = p + 1
		}
	}
}

// partition splits c around a median-of-three pivot: better candidates to
// the left, worse to the right. It returns the pivot's final index.
func partition(c []candidate) int {
	last := len(c) - 1
	mid := last / 2
	// Order c[0], c[mid], c[last] so the median lands in c[mid].
	if better(c[mid], c[0]) {
		c[mid], c[0] = c[0], c[mid]
	}
	if better(c[last], c[mid]) {
		c[last], c[mid] = c[mid], c[last]
		if better(c[mid], c[0]) {
			c[mid], c[0] = c[0], c[mid]
		}
	}
	c[mid], c[last] = c[last], c[mid]
	pivot := c[last]
	store := 0
	for i := range last {
		if better(c[i], pivot) {
			c[i], c[store] = c[store], c[i]
			store++
		}
	}
	c[store], c[last] = c[last], c[store]
	return store
}

// topP keeps the shortest prefix of the candidates, best first, whose
// softmax mass reaches p (llama.cpp: the token that crosses p is kept). It
// sorts only as far as it has to, growing the sorted prefix geometrically.
func topP(cand []candidate, sorted int, p float64) ([]candidate, int) {
	topN(cand, sorted, 1)
	sorted = max(sorted, 1)
	maxL := cand[0].logit
	var sum float64
	for _, c := range cand {
		sum += math.Exp(float64(c.logit - maxL))
	}
	target := p * sum
	var acc float64
	want := min(len(cand), 64)
	for i := 0; ; i++ {
		if i == sorted {
			if sorted == len(cand) {
				return cand, sorted
			}
			want = min(len(cand), max(want, 2*sorted))
			topN(cand, sorted, want)
			sorted = want
		}
		acc += math.Exp(float64(cand[i].logit - maxL))
		if acc >= target {
			return cand[:i+1], i + 1
		}
	}
}

// minP drops candidates whose probability is below m times the best one's,
// comparing logits (logit >= max + ln m) as llama.cpp does. It keeps order.
func minP(cand []candidate, sorted int, m float32) []candidate {
	maxL := cand[0].logit
	if sorted == 0 {
		for _, c := range cand[1:] {
			maxL = max(maxL, c.logit)
		}
	}
	// m > 1 would drop even the best token; clamp so one always survives.
	threshold := min(maxL+float32(math.Log(float64(m))), maxL)
	out := cand[:0]
	for _, c := range cand {
		if c.logit >= threshold {
			out = append(out, c)
		}
	}
	return out
}
