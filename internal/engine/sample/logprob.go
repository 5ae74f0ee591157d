package sample

import (
	"math"
	"slices"
)

// Logprob is one token's natural-log probability under the full softmax.
type Logprob struct {
	ID      int32
	Logprob float32
}

// insertLimit is the largest n for which TopLogprobs keeps a sorted
// insertion list; above it a full sort of dst is cheaper than shifting.
const insertLimit = 32

// TopLogprobs appends the n most likely tokens of the log-softmax over all
// of logits to dst, most likely first, lower id first on ties, and returns
// the extended slice. Sums run in float64. NaN logits are skipped; n <= 0 or
// logits with no finite value append nothing. It allocates only when dst
// lacks capacity.
func TopLogprobs(logits []float32, n int, dst []Logprob) []Logprob {
	lse := logSumExp(logits)
	if n <= 0 || math.IsInf(lse, 0) || math.IsNaN(lse) {
		return dst
	}
	base := len(dst)
	if n > insertLimit {
		for id, l := range logits {
			if l == l {
				dst = append(dst, Logprob{int32(id), l})
			}
		}
		top := dst[base:]
		slices.SortFunc(top, func(a, b Logprob) int {
			return cmpCandidates(candidate{a.ID, a.Logprob}, candidate{b.ID, b.Logprob})
		})
		dst = dst[:base+min(n, len(top))]
	} else {
		for id, l := range logits {
			if l != l {
				continue
			}
			c := candidate{int32(id), l}
			top := dst[base:]
			if len(top) == n && !better(c, candidate{top[n-1].ID, top[n-1].Logprob}) {
				continue
			}
			if len(top) < n {
				dst = append(dst, Logprob{})
				top = dst[base:]
			}
			// Shift worse entries down one and drop c in place.
			i := len(top) - 1
			for ; i > 0 && better(c, candidate{top[i-1].ID, top[i-1].Logprob}); i-- {
				top[i] = top[i-1]
			}
			top[i] = Logprob{c.id, c.logit}
		}
	}
	for i := base; i < len(dst); i++ {
		dst[i].Logprob = float32(float64(dst[i].Logprob) - lse)
	}
	return dst
}

// LogprobOf returns the log-softmax of logits at id: -Inf when id is out of
// range or the token cannot occur, NaN when the logits hold no finite value.
func LogprobOf(logits []float32, id int32) float32 {
	if id < 0 || int(id) >= len(logits) {
		return float32(math.Inf(-1))
	}
	lse := logSumExp(logits)
	if math.IsInf(lse, 0) || math.IsNaN(lse) {
		return float32(math.NaN())
	}
	return float32(float64(logits[id]) - lse)
}

// logSumExp is log(sum(exp(logits))) in float64, skipping NaN; -Inf when
// nothing is finite.
func logSumExp(logits []float32) float64 {
	maxL := math.Inf(-1)
	for _, l := range logits {
		if float64(l) > maxL {
			maxL = float64(l)
		}
	}
	if math.IsInf(maxL, 0) {
		return maxL
	}
	var sum float64
	for _, l := range logits {
		if l == l {
			sum += math.Exp(float64(l) - maxL)
		}
	}
	return maxL + math.Log(sum)
}
