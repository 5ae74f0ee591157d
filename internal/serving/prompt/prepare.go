package prompt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/chat"
	"github.com/skulk/skulk/internal/engine/output"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

// Prepared is a request turned into tokens and settings.
type Prepared struct {
	Prompt    []int32
	params    engine.GenerateParams // MaxTokens and Sample, from the request
	chat      bool
	parserCfg output.Config
	// structured is the grammar the answer follows (see constrain.go); nil
	// for free text.
	structured *structured
}

// Prepare validates req and renders and tokenizes its prompt.
func Prepare(ctx context.Context, md *Model, req request.Request) (Prepared, error) {
	var p Prepared
	check := req
	if check.Model == "" {
		check.Model = "-" // the runner serves one model; the name is the gateway's business
	}
	if err := check.Validate(); err != nil {
		return p, err
	}
	if err := checkToolChoice(req); err != nil {
		return p, err
	}
	text := req.Prompt
	if req.Chat {
		rendered, cfg, err := renderChat(ctx, md, req)
		if err != nil {
			return p, err
		}
		text, p.chat, p.parserCfg = rendered, true, cfg
	}
	s, err := structure(req, p.parserCfg)
	if err != nil {
		return p, err
	}
	if s != nil {
		// The answer is the value: it ends the prompt's text and is not
		// parsed for reasoning or calls.
		text += s.prefix
		p.structured, p.chat = s, false
	}
	param := "prompt"
	if req.Chat {
		param = "messages"
	}
	// A prompt that certainly overflows the window is refused before it is
	// tokenized: tokenizing megabytes takes seconds of a runner's slot.
	if least := md.M.Tok.MinTokens(text); least >= md.Context {
		return p, fault.ParamErrorf(param, "the prompt has at least %d tokens (%d bytes), but the context window is %d tokens; shorten it", least, len(text), md.Context)
	}
	p.Prompt = md.M.EncodePrompt(text)
	if len(p.Prompt) == 0 {
		return p, fault.ParamErrorf(param, "the prompt has no tokens")
	}
	if len(p.Prompt) >= md.Context {
		return p, fault.ParamErrorf(param, "the prompt has %d tokens, but the context window is %d tokens", len(p.Prompt), md.Context)
	}
	if s != nil && md.MaxConstraintBytes > 0 && len(s.source) > md.MaxConstraintBytes {
		param := "json_schema"
		if s.call {
			param = "tools"
		}
		return p, fault.ParamErrorf(param, "the schema is %d bytes; a model split across nodes takes schemas up to %d bytes", len(s.source), md.MaxConstraintBytes)
	}
	p.params = RequestParams(req.Sampling, randomSeed)
	if p.chat {
		p.params.Preserved = md.Chat.preserved
	}
	if err := p.params.Sample.Validate(); err != nil {
		return p, fault.ParamErrorf("sampling", "%v", err)
	}
	return p, nil
}

// renderChat renders the conversation and configures the output parser.
func renderChat(ctx context.Context, md *Model, req request.Request) (string, output.Config, error) {
	var cfg output.Config
	cs := md.Chat
	if le, ok := errors.AsType[*chat.LimitError](cs.tmplErr); ok {
		return "", cfg, templateLimit(le)
	}
	if cs.tmpl == nil {
		return "", cfg, fault.Errorf(fault.ClassInternal, "the model's chat template does not compile: %v", cs.tmplErr)
	}
	msgs := make([]chat.Object, len(req.Messages))
	for i, m := range req.Messages {
		cm := chatMessage(m)
		if cs.dialect == output.Harmony {
			// gpt-oss's template reads the reasoning as "thinking", and
			// tests "in message.content", which fails on a null content.
			cm.Thinking, cm.NullContent = cm.ReasoningContent, false
		}
		msgs[i] = cm.Object()
	}
	var tools []chat.Object
	for i, t := range req.Tools {
		if req.ToolChoice.Mode == "none" {
			break // the model is not told about tools it may not call
		}
		// gpt-oss's template prints "// " + description, which fails on
		// a tool without one (the OpenAI APIs make it optional).
		o, err := chatTool(t, cs.dialect == output.Harmony)
		if err != nil {
			return "", cfg, fault.ParamErrorf("tools", "tools[%d]: %v", i, err)
		}
		tools = append(tools, o)
	}
	rendered, err := md.M.RenderChat(ctx, cs.tmpl, msgs, tools, req.TemplateKwargs, time.Now())
	if err != nil {
		if le, ok := errors.AsType[*chat.LimitError](err); ok {
			return "", cfg, templateLimit(le)
		}
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return "", cfg, err
		}
		var te *chat.TemplateError
		if errors.As(err, &te) {
			return "", cfg, fault.ParamErrorf("messages", "the chat template refused the conversation: %s", te.Message)
		}
		return "", cfg, fault.ParamErrorf("messages", "the conversation does not fit the chat template: %v", err)
	}
	cfg = output.Config{
		Dialect:          cs.dialect,
		ReasoningEnabled: cs.reasoning,
		StartInReasoning: chat.OpensThinking(rendered),
	}
	if req.ToolChoice.Mode != "none" {
		for _, t := range req.Tools {
			cfg.OfferedTools = append(cfg.OfferedTools, t.Name)
		}
	}
	return rendered, cfg, nil
}

// templateLimit is the answer to a chat request whose template passes one
// of its render budgets: a 400 with code template_limit.
func templateLimit(le *chat.LimitError) *fault.Error {
	return &fault.Error{Class: fault.ClassInvalid, Param: "messages", Code: fault.CodeTemplateLimit,
		Message: fmt.Sprintf("the model's chat template would pass its %s budget on this conversation (%v); it may be hostile: send a raw prompt, or override the template", le.Budget, le)}
}

func chatMessage(m request.Message) chat.Message {
	cm := chat.Message{
		Role:             string(m.Role),
		Content:          m.Content,
		NullContent:      m.Content == "" && len(m.ToolCalls) > 0,
		ReasoningContent: m.ReasoningContent,
		ToolCallID:       m.ToolCallID,
		Name:             m.Name,
	}
	for _, c := range m.ToolCalls {
		var args any = c.Arguments
		if v, err := chat.DecodeJSON([]byte(c.Arguments)); err == nil {
			if o, ok := v.(chat.Object); ok {
				args = o
			}
		}
		cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return cm
}

// chatTool gives a tool the OpenAI shape templates expect:
// {"type":"function","function":{"name","description","parameters"}};
// an empty description is left out unless describe is set.
func chatTool(t request.Tool, describe bool) (chat.Object, error) {
	fn := chat.Object{{Key: "name", Value: t.Name}}
	if t.Description != "" || describe {
		fn = append(fn, chat.Field{Key: "description", Value: t.Description})
	}
	if len(t.Parameters) > 0 {
		v, err := chat.DecodeJSON(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
		fn = append(fn, chat.Field{Key: "parameters", Value: v})
	}
	return chat.Object{{Key: "type", Value: "function"}, {Key: "function", Value: fn}}, nil
}
