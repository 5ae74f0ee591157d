package runner

import (
	"errors"
	"fmt"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// ErrSpeculative is matched (errors.Is) by a load refused for its
// speculative decoding settings; a draft model whose vocabulary differs
// also matches engine.ErrDraftVocab.
var ErrSpeculative = errors.New("runner: load: speculative decoding")

// speculative is a loaded model's drafting setup: nothing, prompt lookup,
// or a draft model shared by every task (each task drafts with its own
// cache).
type speculative struct {
	mode     string
	draft    *engine.Model
	draftMax int
}

// openSpeculative checks spec.Speculative and opens its draft model.
func openSpeculative(m *engine.Model, spec proto.LoadSpec, opts serving) (speculative, error) {
	s := spec.Speculative
	if s == nil {
		return speculative{}, nil
	}
	if s.DraftMax < 0 {
		return speculative{}, fmt.Errorf("%w: draft_max %d is negative", ErrSpeculative, s.DraftMax)
	}
	switch s.Mode {
	case proto.SpeculativeLookup:
		return speculative{mode: s.Mode, draftMax: s.DraftMax}, nil
	case proto.SpeculativeDraft:
		if s.DraftModelPath == "" {
			return speculative{}, fmt.Errorf("%w: mode %q needs draft_model_path", ErrSpeculative, s.Mode)
		}
		d, err := engine.Open(s.DraftModelPath, engine.Options{Threads: spec.Threads, Kernels: opts.kernels, NoPack: opts.noPack, CacheType: spec.CacheType})
		if err != nil {
			return speculative{}, fmt.Errorf("%w: draft model: %w", ErrSpeculative, err)
		}
		if err := engine.SameVocab(m, d); err != nil {
			d.Close()
			return speculative{}, fmt.Errorf("%w: %s cannot draft for %s: %w", ErrSpeculative, s.DraftModelPath, spec.ModelPath, err)
		}
		return speculative{mode: s.Mode, draft: d, draftMax: s.DraftMax}, nil
	}
	return speculative{}, fmt.Errorf("%w: mode %q (use %q or %q)", ErrSpeculative, s.Mode, proto.SpeculativeLookup, proto.SpeculativeDraft)
}

// drafter returns a task's drafter and draft cap (nil: no speculation).
func (s speculative) drafter(m *engine.Model, context int) (engine.Drafter, int, error) {
	switch s.mode {
	case proto.SpeculativeLookup:
		return engine.PromptLookup{}, s.draftMax, nil
	case proto.SpeculativeDraft:
		d, err := engine.NewDraftModel(m, s.draft, context)
		return d, s.draftMax, err
	}
	return nil, 0, nil
}

func (s speculative) close() {
	if s.draft != nil {
		s.draft.Close()
	}
}
