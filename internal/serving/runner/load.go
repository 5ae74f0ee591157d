package runner

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/chat"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/serving/prompt"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// ErrShardUnsupported is the load failure for a layer range that is not the
// whole model and comes without pipeline wiring (LoadSpec.Pipeline).
var ErrShardUnsupported = errors.New("runner: only whole models are served; pipeline shards are not supported yet")

// loadEvent is the loader's report: warming, then the model or an error.
type loadEvent struct {
	warming bool
	model   *loaded
	err     error
}

// loadModel opens, checks and warms the model on the kernels within the
// cap kernels, reporting to ch.
func loadModel(spec proto.LoadSpec, opts serving, log *slog.Logger, ch chan<- loadEvent) {
	l, err := openModel(spec, opts, log, func() { ch <- loadEvent{warming: true} })
	if err != nil {
		log.Error("load failed", "model", spec.ModelPath, "err", err)
		ch <- loadEvent{err: err}
		return
	}
	ch <- loadEvent{model: l}
}

func openModel(spec proto.LoadSpec, opts serving, log *slog.Logger, warming func()) (*loaded, error) {
	kernels := opts.kernels
	if spec.ModelPath == "" {
		return nil, errors.New("runner: load: model_path is required")
	}
	if spec.Pipeline != nil {
		return openStage(spec, opts, log, warming)
	}
	whole := spec.Start == 0 && spec.End == 0
	if !whole && !(spec.Start == 0 && spec.First && spec.Last) {
		return nil, fmt.Errorf("%w (asked for blocks [%d, %d) first=%v last=%v)", ErrShardUnsupported, spec.Start, spec.End, spec.First, spec.Last)
	}
	if spec.Threads < 0 || spec.ContextTokens < 0 {
		return nil, fmt.Errorf("runner: load: threads (%d) and context_tokens (%d) must not be negative", spec.Threads, spec.ContextTokens)
	}
	if l, ok, err := openEncoder(spec, kernels, log, warming); ok {
		return l, err
	}
	opt := engine.Options{Threads: spec.Threads, Kernels: kernels, NoPack: opts.noPack, CacheType: spec.CacheType}
	if !whole {
		opt.Range = &model.Range{Start: spec.Start, End: spec.End, First: true, Last: true}
	}
	m, err := engine.Open(spec.ModelPath, opt)
	if err != nil {
		return nil, fmt.Errorf("runner: load: %w", err)
	}
	if !whole && spec.End != m.Config.NLayer {
		m.Close()
		return nil, fmt.Errorf("%w (asked for blocks [%d, %d) of %d)", ErrShardUnsupported, spec.Start, spec.End, m.Config.NLayer)
	}
	l := &loaded{m: m, context: spec.ContextTokens}
	if l.context == 0 || l.context > m.Config.ContextLength {
		l.context = m.Config.ContextLength
	}
	if l.slots, err = slotsFor(opts.slots, opts.explicit, l.context, kvBytesPerToken(m.Config)); err != nil {
		m.Close()
		return nil, err
	}
	l.prompts = &prompt.Model{M: m, Context: l.context}
	l.prompts.Chat, err = prompt.SetupChat(m, spec.ChatTemplateOverride)
	if err != nil {
		m.Close()
		return nil, err
	}
	if _, ok := errors.AsType[*chat.LimitError](l.prompts.Chat.Err()); ok {
		log.Warn("the model's chat template passes its render budgets on a one-message probe; chat requests will be refused (template_limit), raw prompts are served", "err", l.prompts.Chat.Err())
	} else if err := l.prompts.Chat.Err(); err != nil {
		log.Warn("the model's chat template does not compile; chat requests will fail", "err", err)
	}
	warming()
	if err := warmUp(m); err != nil {
		m.Close()
		return nil, err
	}
	sp, err := openSpeculative(m, spec, opts)
	if err != nil {
		m.Close()
		return nil, err
	}
	l.local = &local{m: m, spec: sp, context: l.context,
		steps: newBatcher(m.Shard, batchConfig{gather: stepGather, budget: DefaultStepBudget, chunk: opts.chunk, meter: opts.meter,
			prefixBytes: prefixBytes(opts.prefixMB, l.context, kvBytesPerToken(m.Config))}, nil)}
	l.seqs = l.local
	return l, nil
}

// warmUp runs one forward pass of one token, which faults in the weights'
// first pages and proves the forward path works before the runner says ready.
func warmUp(m *engine.Model) error {
	tok := m.Tok.BOS()
	if tok < 0 || int(tok) >= m.Config.NVocab {
		tok = 0
	}
	res, err := m.Shard.Forward(m.Shard.NewCache(1), model.Batch{Tokens: []int32{tok}})
	if err != nil {
		return fmt.Errorf("runner: warm-up forward pass: %w", err)
	}
	if len(res.Logits) != m.Config.NVocab {
		return fmt.Errorf("runner: warm-up forward pass gave %d logits, want %d", len(res.Logits), m.Config.NVocab)
	}
	return nil
}
