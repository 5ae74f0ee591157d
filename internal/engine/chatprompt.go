package engine

import (
	"context"
	"time"

	"github.com/skulk/skulk/internal/engine/chat"
)

// ChatTemplate returns the model's chat template: override when given, else
// the GGUF's tokenizer.chat_template, else the documented fallback.
func (m *Model) ChatTemplate(override string) (*chat.Template, error) {
	src := override
	if src == "" {
		src, _ = m.File.String("tokenizer.chat_template")
	}
	if src == "" {
		return chat.Fallback(), nil
	}
	return chat.Parse(src)
}

// RenderChat renders messages through the model's template with the
// assistant turn opened, as the prompt for a chat generation, under the
// template's default budgets; ctx ends the render early.
func (m *Model) RenderChat(ctx context.Context, t *chat.Template, msgs []chat.Object, tools []chat.Object, kwargs map[string]any, now time.Time) (string, error) {
	in := chat.Input{Messages: msgs, Tools: tools, AddGenerationPrompt: true, Kwargs: kwargs, Now: now}
	if id := m.Tok.BOS(); id >= 0 {
		in.BOS = m.Tok.TokenText(id)
	}
	if id := m.Tok.EOS(); id >= 0 {
		in.EOS = m.Tok.TokenText(id)
	}
	return t.RenderContext(ctx, in)
}
