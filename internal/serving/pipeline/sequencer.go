package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/skulk/skulk/internal/engine/sequence"
)

var _ sequence.Sequencer = (*Stage)(nil)

// ErrNoConstraintSource refuses a spec with a constraint but no source: the
// last rank samples, so it must build its own copy.
var ErrNoConstraintSource = errors.New("pipeline: a constrained sequence needs the constraint's source")

// reportWait bounds the wait for a traced sequence's timings after its
// end.
const reportWait = 2 * time.Second

// Generate runs spec as the pipeline's head: it is rank 0's
// sequence.Sequencer, over Submit and the Sequence's tokens. The last rank
// samples under its own copy of the constraint, built from
// spec.ConstraintSource; spec.Constraint, rank 0's copy, is advanced by
// each token delivered, so that its owner can ask it, as after
// engine.Model.Generate, whether the value is complete. Prefill in the
// Stats is the time to the first token, which includes the wait for a
// slot.
func (s *Stage) Generate(ctx context.Context, spec sequence.Spec, emit func(sequence.Token) error) (st sequence.Stats, _ error) {
	st.PromptTokens = len(spec.Prompt)
	req := Request{Prompt: spec.Prompt, MaxTokens: spec.MaxTokens, Sample: spec.Sample, Context: spec.Context,
		Logprobs: spec.Logprobs, TopLogprobs: spec.TopLogprobs, Trace: spec.Trace}
	if spec.Constraint != nil {
		if len(spec.ConstraintSource) == 0 {
			return st, ErrNoConstraintSource
		}
		req.Constraint = spec.ConstraintSource
	}
	start := time.Now()
	q, err := s.Submit(ctx, req)
	if err != nil {
		return st, err
	}
	if spec.Admitted != nil {
		spec.Admitted(0) // no prefix cache across ranks
	}
	var first, last time.Time
	defer func() { // st is the result: the timings count on every return
		if first.IsZero() {
			first, last = time.Now(), time.Now()
		}
		st.Prefill, st.Decode = first.Sub(start), last.Sub(first)
		q.Cancel() // does nothing once it ended
		if spec.Trace {
			// The ranks' timings follow the release around the ranks:
			// one trip, bounded.
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportWait)
			st.Ranks = q.Timings(tctx)
			cancel()
		}
	}()
	for {
		tok, err := q.NextToken(ctx)
		if err == io.EOF {
			st.FinishReason = string(q.Finish())
			return st, nil
		}
		if err != nil {
			return st, err
		}
		if spec.Constraint != nil {
			if err := spec.Constraint.Accept(tok.ID); err != nil {
				return st, fmt.Errorf("pipeline: the last rank sampled a token the constraint refuses: %w", err)
			}
		}
		st.GeneratedTokens++
		if last = time.Now(); first.IsZero() {
			first = last
		}
		if err := emit(sequence.Token(tok)); err != nil {
			if errors.Is(err, sequence.ErrStop) {
				st.FinishReason = sequence.FinishStop
				return st, nil
			}
			return st, err
		}
	}
}
