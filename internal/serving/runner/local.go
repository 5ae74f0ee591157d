package runner

import (
	"context"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/sequence"
)

// local is the sequencer of a model held whole in this process: the
// engine's loop (engine.Model.Generate), whose prompt and decode steps go
// through the batcher in steps with the other tasks' sequences, or, when
// it speculates, beside it.
type local struct {
	m       *engine.Model
	steps   *batcher
	spec    speculative
	context int // the window of a spec that names none
}

var _ sequence.Sequencer = (*local)(nil)

// Generate runs spec through engine.Model.Generate; see sequence.Sequencer.
// The engine's text is dropped: the runner makes its own from the ids, as
// it does for any sequencer.
func (s *local) Generate(ctx context.Context, spec sequence.Spec, emit func(sequence.Token) error) (sequence.Stats, error) {
	params := engine.GenerateParams{MaxTokens: spec.MaxTokens, Sample: spec.Sample, Context: spec.Context, Constraint: spec.Constraint}
	if params.Context == 0 {
		params.Context = s.context
	}
	var (
		seq    *batchSeq
		cached int
		err    error
	)
	defer func() {
		if seq != nil {
			s.steps.finish(seq)
		}
	}()
	params.Prefill = func(prompt []int32, capacity int) (*model.Cache, []float32, error) {
		var err error
		seq, err = s.steps.prefill(ctx, prompt, capacity, spec.Admitted)
		if err != nil {
			return nil, nil, err
		}
		cached = seq.reused
		return nil, seq.logits, nil
	}
	params.Step = func(_ *model.Cache, tok int32) ([]float32, error) {
		return s.steps.step(ctx, seq, tok)
	}
	if params.Draft, params.DraftMax, err = s.spec.drafter(s.m, params.Context); err != nil {
		return sequence.Stats{PromptTokens: len(spec.Prompt)}, err
	}
	if params.Draft != nil && params.Constraint == nil {
		// Speculation verifies its drafts in one pass over the sequence's
		// own cache, so this sequence runs beside the batcher, not in it.
		params.Prefill, params.Step = nil, nil
		if spec.Admitted != nil {
			spec.Admitted(0) // no prefix cache beside the batcher
		}
	}
	logprobs := spec.Logprobs || spec.TopLogprobs > 0
	st, err := s.m.Generate(ctx, spec.Prompt, params, func(t engine.Token) error {
		if t.ID < 0 {
			return nil // the text held back: the runner keeps its own
		}
		out := sequence.Token{ID: t.ID}
		if logprobs {
			out.Logprob = sample.LogprobOf(t.Logits, t.ID)
			if spec.TopLogprobs > 0 {
				out.Top = sample.TopLogprobs(t.Logits, spec.TopLogprobs, nil)
			}
		}
		return emit(out)
	})
	st.CachedTokens = cached
	return st, err
}

func (s *local) close() {
	s.steps.close()
	s.spec.close()
}
