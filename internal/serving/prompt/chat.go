package prompt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/chat"
	"github.com/skulk/skulk/internal/engine/output"
)

// Chat is what a loaded model needs to serve chat requests (SetupChat).
type Chat struct {
	tmpl      *chat.Template // nil when the template does not compile
	tmplErr   error
	dialect   output.Dialect
	reasoning bool // the template knows <think> blocks
	// preserved marks the control tokens whose text a chat answer keeps:
	// the dialect's markers, which the output parser reads (llama-server's
	// preserved tokens). Kimi K2's call markers are control tokens.
	preserved []bool
}

// SetupChat compiles the chat template. An override that does not compile
// fails the load (the operator asked for it); a GGUF template that does not
// compile fails only chat requests, so raw completions still work.
func SetupChat(m *engine.Model, override string) (Chat, error) {
	t, err := m.ChatTemplate(override)
	if err != nil {
		if override != "" {
			return Chat{}, fmt.Errorf("runner: load: chat_template_override: %w", err)
		}
		return Chat{tmplErr: err}, nil
	}
	// A probe render of one short turn: a template that passes its budgets
	// on that (a hostile one) serves raw prompts only, refusing chat
	// requests with template_limit, instead of costing every chat request
	// its budgets.
	probe := chat.Input{Messages: []chat.Object{chat.Message{Role: "user", Content: "hi"}.Object()}, AddGenerationPrompt: true, Now: time.Now()}
	if _, err := t.RenderContext(context.Background(), probe); err != nil {
		if le, ok := errors.AsType[*chat.LimitError](err); ok {
			return Chat{tmplErr: le}, nil
		}
	}
	d := dialectOf(t.Family())
	return Chat{tmpl: t, dialect: d, reasoning: reasons(d, t.Source()),
		preserved: m.Tok.ControlTokens(d.Markers())}, nil
}

// reasons says whether a model of dialect d whose template is src writes
// a reasoning block for the output parser to split off: gpt-oss's
// analysis channel, a <think> block, or a Mistral reasoning model's
// [THINK] block.
func reasons(d output.Dialect, src string) bool {
	return d == output.Harmony || strings.Contains(src, "<think>") || (d == output.Mistral && strings.Contains(src, "[THINK]"))
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

// Err is why chat requests are refused: the template does not compile, or
// passes its render budgets on a one-message probe (*chat.LimitError); nil
// when they are served.
func (c Chat) Err() error { return c.tmplErr }
