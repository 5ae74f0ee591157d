package model

import (
	"fmt"
	"slices"
)

// Steps is the scratch memory of Shard.Step: what a Cache's arena is to
// Forward, for a batch of several sequences. It grows to the largest batch
// seen and is then reused, so a step allocates nothing. It is not safe for
// concurrent use.
type Steps struct {
	ar   arena
	segs []seg
}

// Step runs one decode step of several sequences together: row i of the
// batch (token b.Tokens[i] on the first shard, hidden row i otherwise) is
// the next position of the sequence in caches[i]. The weights are read once
// for every sequence instead of once each, which is what makes concurrent
// decoding cheap when memory bandwidth bounds a step. Each sequence's row of
// the result (its logits on the last shard, its hidden state otherwise) is
// bit for bit what Forward returns for that sequence alone: every row goes
// through the same per-row kernels, and attention reads only its own cache.
// The result aliases st and stays valid until the next Step with it.
func (s *Shard) Step(st *Steps, caches []*Cache, b Batch) (Result, error) {
	cfg := s.Config
	d := cfg.NEmbd
	n := len(caches)
	switch {
	case n == 0:
		return Result{}, fmt.Errorf("model: a step of no sequences")
	case n > ubatch:
		return Result{}, fmt.Errorf("model: a step of %d sequences, at most %d", n, ubatch)
	case s.Range.First && (b.Hidden != nil || len(b.Tokens) != n):
		return Result{}, fmt.Errorf("model: the first shard steps %d sequences with one token each, got %d tokens", n, len(b.Tokens))
	case !s.Range.First && (b.Tokens != nil || len(b.Hidden) != n*d):
		return Result{}, fmt.Errorf("model: shard [%d, %d) steps %d sequences with one %d-wide hidden row each, got %d values",
			s.Range.Start, s.Range.End, n, d, len(b.Hidden))
	}
	for i, c := range caches {
		if !s.owns(c) {
			return Result{}, fmt.Errorf("model: the cache of sequence %d was made for another shard", i)
		}
		if err := c.room(1); err != nil {
			return Result{}, err
		}
		if slices.Contains(caches[:i], c) {
			return Result{}, fmt.Errorf("model: sequence %d's cache is also sequence %d's: a step takes one position of each sequence", i, slices.Index(caches, c))
		}
	}
	if err := s.checkTokens(b.Tokens, "sequence"); err != nil {
		return Result{}, err
	}
	capacity := 0
	for _, c := range caches {
		c.fit(1) // within the limit: checked above
		capacity = max(capacity, c.cap)
	}
	nLogits := 0
	if s.Range.Last {
		nLogits = n
	}
	a := &st.ar
	a.prepare(s, capacity, n, nLogits)
	x := a.x
	if err := s.input(b, x); err != nil {
		return Result{}, err
	}
	st.segs = st.segs[:0]
	for i, c := range caches {
		a.pos[i] = c.len
		st.segs = append(st.segs, seg{c: c, row: i, n: 1})
	}
	s.ropeTables(a, a.pos[:n], st.segs)
	for i := range s.layers {
		s.block(i, st.segs, a, x, n, false)
	}
	for _, c := range caches {
		c.len++
	}
	if !s.Range.Last {
		return Result{Hidden: x}, nil
	}
	s.head(a, x, n, a.logits)
	return Result{Logits: a.logits}, nil
}
