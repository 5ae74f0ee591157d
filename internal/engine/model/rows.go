package model

import (
	"fmt"
	"slices"
)

// StepRows runs one pass over several sequences that each take rows[i]
// consecutive positions: a decode step (one row) and prefill chunks (many)
// of different sequences in one batch, which is how a serving loop keeps
// running streams flowing while it reads a long prompt a chunk at a time.
// The tokens of sequence i are the next rows[i] of b.Tokens. It returns
// the logits of each sequence's last row, row i of NVocab (whole models
// only). As with Step, every row goes through the per-row kernels and
// attention reads only its own cache, so each sequence's keys, values and
// logits are bit for bit what Forward gives it alone, whatever chunks its
// prompt was cut into and whatever company each chunk kept. The result
// aliases st and stays valid until its next use.
func (s *Shard) StepRows(st *Steps, caches []*Cache, rows []int, b Batch) (Result, error) {
	n := 0
	for _, r := range rows {
		if r < 1 {
			return Result{}, fmt.Errorf("model: a sequence of a step takes %d rows; at least 1", r)
		}
		n += r
	}
	switch {
	case !s.Range.First || !s.Range.Last:
		return Result{}, fmt.Errorf("model: StepRows needs the whole model")
	case len(caches) == 0 || len(rows) != len(caches):
		return Result{}, fmt.Errorf("model: a step of %d sequences with %d row counts", len(caches), len(rows))
	case n > ubatch:
		return Result{}, fmt.Errorf("model: a step of %d rows, at most %d", n, ubatch)
	case b.Hidden != nil || len(b.Tokens) != n:
		return Result{}, fmt.Errorf("model: a step of %d rows got %d tokens", n, len(b.Tokens))
	}
	for i, c := range caches {
		if !s.owns(c) {
			return Result{}, fmt.Errorf("model: the cache of sequence %d was made for another shard", i)
		}
		if err := c.room(rows[i]); err != nil {
			return Result{}, err
		}
		if slices.Contains(caches[:i], c) {
			return Result{}, fmt.Errorf("model: sequence %d's cache is also sequence %d's", i, slices.Index(caches, c))
		}
	}
	if err := s.checkTokens(b.Tokens, "row"); err != nil {
		return Result{}, err
	}
	capacity := 0
	for i, c := range caches {
		c.fit(rows[i]) // within the limit: checked above
		capacity = max(capacity, c.cap)
	}
	a := &st.ar
	a.prepare(s, capacity, n, len(caches))
	x := a.x
	if err := s.input(b, x); err != nil {
		return Result{}, err
	}
	st.segs = st.segs[:0]
	row := 0
	for i, c := range caches {
		for t := range rows[i] {
			a.pos[row+t] = c.len + t
		}
		st.segs = append(st.segs, seg{c: c, row: row, n: rows[i]})
		row += rows[i]
	}
	s.ropeTables(a, a.pos[:n], st.segs)
	for i := range s.layers {
		s.block(i, st.segs, a, x, n, false)
	}
	d := s.Config.NEmbd
	for i, sg := range st.segs {
		sg.c.len += sg.n
		// Row i is written after the rows before it were read: each
		// sequence's last row is at or after its index.
		if last := sg.row + sg.n - 1; last != i {
			copy(x[i*d:(i+1)*d], x[last*d:(last+1)*d])
		}
	}
	s.head(a, x, len(caches), a.logits)
	return Result{Logits: a.logits}, nil
}
