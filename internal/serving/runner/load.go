package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/chat"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/output"
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

// chatSetup is what a loaded model needs to serve chat requests.
type chatSetup struct {
	tmpl      *chat.Template // nil when the template does not compile
	tmplErr   error
	dialect   output.Dialect
	reasoning bool // the template knows <think> blocks
	// preserved marks the control tokens whose text a chat answer keeps:
	// the dialect's markers, which the output parser reads (llama-server's
	// preserved tokens). Kimi K2's call markers are control tokens.
	preserved []bool
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
	l.chat, err = setupChat(m, spec.ChatTemplateOverride)
	if err != nil {
		m.Close()
		return nil, err
	}
	if _, ok := errors.AsType[*chat.LimitError](l.chat.tmplErr); ok {
		log.Warn("the model's chat template passes its render budgets on a one-message probe; chat requests will be refused (template_limit), raw prompts are served", "err", l.chat.tmplErr)
	} else if l.chat.tmplErr != nil {
		log.Warn("the model's chat template does not compile; chat requests will fail", "err", l.chat.tmplErr)
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

// setupChat compiles the chat template. An override that does not compile
// fails the load (the operator asked for it); a GGUF template that does not
// compile fails only chat requests, so raw completions still work.
func setupChat(m *engine.Model, override string) (chatSetup, error) {
	t, err := m.ChatTemplate(override)
	if err != nil {
		if override != "" {
			return chatSetup{}, fmt.Errorf("runner: load: chat_template_override: %w", err)
		}
		return chatSetup{tmplErr: err}, nil
	}
	// A probe render of one short turn: a template that passes its budgets
	// on that (a hostile one) serves raw prompts only, refusing chat
	// requests with template_limit, instead of costing every chat request
	// its budgets.
	probe := chat.Input{Messages: []chat.Object{chat.Message{Role: "user", Content: "hi"}.Object()}, AddGenerationPrompt: true, Now: time.Now()}
	if _, err := t.RenderContext(context.Background(), probe); err != nil {
		if le, ok := errors.AsType[*chat.LimitError](err); ok {
			return chatSetup{tmplErr: le}, nil
		}
	}
	d := dialectOf(t.Family())
	return chatSetup{tmpl: t, dialect: d, reasoning: d == output.Harmony || strings.Contains(t.Source(), "<think>"),
		preserved: m.Tok.ControlTokens(d.Markers())}, nil
}

func dialectOf(f chat.Family) output.Dialect {
	switch f {
	case chat.FamilyHermes:
		return output.Hermes
	case chat.FamilyQwen3Coder:
		return output.QwenXML
	case chat.FamilyLlama3:
		return output.Llama3
	case chat.FamilyMistral:
		return output.Mistral
	case chat.FamilyHarmony:
		return output.Harmony
	case chat.FamilyDeepSeek:
		return output.DeepSeek
	case chat.FamilyKimi:
		return output.Kimi
	}
	return output.NoDialect
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
