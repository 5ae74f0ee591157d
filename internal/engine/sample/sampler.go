package sample

import (
	"math"
	"math/rand/v2"
)

// NoToken is what Sample returns when no token can be drawn: the logits are
// empty, or every logit is -Inf or NaN (for example, all masked).
const NoToken int32 = -1

// Constraint restricts the next token, for grammar-constrained output. Mask
// sets the logit of every disallowed token to -Inf; it receives the
// Sampler's private copy of the logits, never the caller's slice.
type Constraint interface {
	Mask(logits []float32)
}

// Sampler draws tokens for one generation. It owns its generator and scratch
// buffers, so after the first call Sample allocates nothing.
type Sampler struct {
	p          Params
	constraint Constraint

	pcg rand.PCG
	rng *rand.Rand

	work   []float32   // private copy of the logits, penalised and masked
	cand   []candidate // surviving tokens
	counts []int32     // per-token occurrence counts in the window; all zero between calls
}

type candidate struct {
	id    int32
	logit float32
}

// New returns a Sampler for p. It does not validate p (call Params.Validate
// at the edge); out-of-range values are clamped rather than trusted, so New
// and Sample never panic. vocabSize sizes the scratch buffers up front; a
// logits slice of another length still works.
func New(p Params, vocabSize int) *Sampler {
	s := &Sampler{p: p}
	// The second PCG word is a fixed odd constant so seed 0 is a normal seed.
	s.pcg = *rand.NewPCG(p.Seed, 0x9e3779b97f4a7c15)
	s.rng = rand.New(&s.pcg)
	if vocabSize > 0 {
		s.work = make([]float32, vocabSize)
		s.cand = make([]candidate, vocabSize)
		if p.RepeatPenalty > 0 && p.RepeatPenalty != 1 || p.PresencePenalty != 0 || p.FrequencyPenalty != 0 {
			s.counts = make([]int32, vocabSize)
		}
	}
	return s
}

// SetConstraint installs c (nil removes it); it is applied before penalties.
func (s *Sampler) SetConstraint(c Constraint) { s.constraint = c }

// Params returns the settings the Sampler was made with.
func (s *Sampler) Params() Params { return s.p }

// Sample returns the next token id given the model's logits and the tokens
// generated so far (history, oldest first, used only for penalties).
//
// Sample never writes to logits: it copies them into a private buffer
// before masking and penalising, so logprobs computed from the same slice
// afterwards describe the model's raw distribution.
//
// With Temperature <= 0 it returns the argmax of the masked, penalised
// logits (the first maximum on ties). Otherwise it applies top-k, top-p,
// min-p and temperature, then draws from what is left.
func (s *Sampler) Sample(logits []float32, history []int32) int32 {
	n := len(logits)
	if n == 0 {
		return NoToken
	}
	if cap(s.work) < n {
		s.work = make([]float32, n)
	}
	work := s.work[:n]
	copy(work, logits)
	if s.constraint != nil {
		s.constraint.Mask(work)
	}
	s.penalize(work, history)

	if !(s.p.Temperature > 0) {
		return argmax(work)
	}

	cand := s.candidates(work)
	if len(cand) == 0 {
		return NoToken
	}
	sorted := 0 // cand[:sorted] are the best tokens, in order
	if k := s.p.TopK; k > 0 && k < len(cand) {
		topN(cand, 0, k)
		cand, sorted = cand[:k], k
	}
	if p := s.p.TopP; p > 0 && p < 1 {
		cand, sorted = topP(cand, sorted, float64(p))
	}
	if m := s.p.MinP; m > 0 {
		cand = minP(cand, sorted, m)
	}
	inv := s.p.Temperature
	for i := range cand {
		cand[i].logit /= inv
	}
	return s.draw(cand)
}

// candidates copies every drawable token (finite or +Inf logit) into the
// candidate buffer, in id order.
func (s *Sampler) candidates(work []float32) []candidate {
	if cap(s.cand) < len(work) {
		s.cand = make([]candidate, len(work))
	}
	cand := s.cand[:0]
	for id, l := range work {
		if l == l && !math.IsInf(float64(l), -1) {
			cand = append(cand, candidate{int32(id), l})
		}
	}
	return cand
}

// penalize applies llama.cpp's repetition, frequency and presence penalties
// for the tokens in the window to work.
func (s *Sampler) penalize(work []float32, history []int32) {
	rep := s.p.RepeatPenalty
	repOn := rep > 0 && rep != 1
	if !repOn && s.p.FrequencyPenalty == 0 && s.p.PresencePenalty == 0 {
		return
	}
	window := history
	switch last := s.p.RepeatLastN; {
	case last == 0:
		last = DefaultRepeatLastN
		fallthrough
	case last > 0:
		if len(window) > last {
			window = window[len(window)-last:]
		}
	}
	if cap(s.counts) < len(work) {
		s.counts = make([]int32, len(work))
	}
	counts := s.counts[:len(work)]
	for _, id := range window {
		if id >= 0 && int(id) < len(work) {
			counts[id]++
		}
	}
	// Each distinct token is penalised once, at its first sight in the
	// window; zeroing its count marks it done and leaves counts clean.
	for _, id := range window {
		if id < 0 || int(id) >= len(work) || counts[id] == 0 {
			continue
		}
		c := counts[id]
		counts[id] = 0
		l := work[id]
		if repOn {
			if l <= 0 {
				l *= rep
			} else {
				l /= rep
			}
		}
		l -= float32(c)*s.p.FrequencyPenalty + s.p.PresencePenalty
		work[id] = l
	}
}

// argmax returns the first index of the largest non-NaN value, or NoToken
// when every value is NaN or -Inf.
func argmax(v []float32) int32 {
	best := NoToken
	bestV := float32(math.Inf(-1))
	for i, x := range v {
		if x > bestV {
			best, bestV = int32(i), x
		}
	}
	return best
}

// draw picks one candidate with probability softmax(logit).
func (s *Sampler) draw(cand []candidate) int32 {
	maxL := cand[0].logit
	for _, c := range cand[1:] {
		if c.logit > maxL {
			maxL = c.logit
		}
	}
	if math.IsInf(float64(maxL), 1) {
		// Infinite logits (or temperature overflow) leave all the mass on
		// the infinite ones; take the first, like argmax.
		for _, c := range cand {
			if c.logit == maxL {
				return c.id
			}
		}
	}
	// The logits are not needed after this, so each slot keeps its weight
	// and the walk below does not recompute exp.
	var sum float64
	for i := range cand {
		w := math.Exp(float64(cand[i].logit - maxL))
		cand[i].logit = float32(w)
		sum += w
	}
	u := s.rng.Float64() * sum
	var acc float64
	for _, c := range cand {
		acc += float64(c.logit)
		if u < acc {
			return c.id
		}
	}
	return cand[len(cand)-1].id // rounding left u at the very top
}
