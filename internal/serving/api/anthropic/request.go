package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/wirejson"
	"github.com/skulk/skulk/internal/serving/request"
)

// MaxTokensLimit bounds max_tokens. It is far above any context window we
// serve; a larger value is a client bug, refused before anything sizes a
// buffer from it.
const MaxTokensLimit = 1 << 20

// Decoded is a decoded POST /v1/messages request: the normalized request
// plus the transport option that stays in the HTTP layer.
type Decoded struct {
	Request request.Request
	Stream  bool
}

// messagesRequest is the wire shape of POST /v1/messages and, without
// max_tokens and the sampling fields, of POST /v1/messages/count_tokens.
// Fields kept as json.RawMessage take more than one JSON type and are decoded
// by hand.
type messagesRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int64          `json:"max_tokens"`
	System        json.RawMessage `json:"system"`
	Messages      []message       `json:"messages"`
	Tools         []tool          `json:"tools"`
	ToolChoice    *toolChoice     `json:"tool_choice"`
	StopSequences []string        `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int64          `json:"top_k"`
	Thinking      *thinking       `json:"thinking"`
	OutputConfig  *outputConfig   `json:"output_config"`
	Stream        *bool           `json:"stream"`

	// Accepted and ignored, but type-checked.
	Metadata    *metadata       `json:"metadata"`
	ServiceTier *string         `json:"service_tier"`
	CacheCtl    json.RawMessage `json:"cache_control"`
}

type metadata struct {
	UserID *string `json:"user_id"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// block is any content block of a request; which fields apply depends on
// Type.
type block struct {
	Type string `json:"type"`
	// text
	Text *string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
	// thinking
	Thinking *string `json:"thinking"`
}

type tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
}

type thinking struct {
	Type         string  `json:"type"`
	BudgetTokens *int64  `json:"budget_tokens"`
	Display      *string `json:"display"`
}

type outputConfig struct {
	Effort *string       `json:"effort"`
	Format *outputFormat `json:"format"`
}

type outputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// DecodeMessagesRequest decodes and validates a POST /v1/messages body.
// Every error is a *fault.Error of class invalid_request naming the field.
func DecodeMessagesRequest(body []byte) (Decoded, error) {
	var w messagesRequest
	if err := wirejson.Unmarshal(body, &w); err != nil {
		return Decoded{}, err
	}
	if w.MaxTokens == nil {
		return Decoded{}, fault.ParamErrorf("max_tokens", "max_tokens is required")
	}
	if n := *w.MaxTokens; n < 1 || n > MaxTokensLimit {
		return Decoded{}, fault.ParamErrorf("max_tokens", "max_tokens must be between 1 and %d, got %d", MaxTokensLimit, n)
	}
	req, err := w.request()
	if err != nil {
		return Decoded{}, err
	}
	req.Sampling.MaxTokens = int(*w.MaxTokens)
	if req.Sampling, err = w.sampling(req.Sampling); err != nil {
		return Decoded{}, err
	}
	d := Decoded{Request: req}
	if w.Stream != nil {
		d.Stream = *w.Stream
	}
	if err := d.Request.Validate(); err != nil {
		return Decoded{}, fmt.Errorf("anthropic: %w", err)
	}
	return d, nil
}

// DecodeCountTokensRequest decodes and validates a POST
// /v1/messages/count_tokens body: the fields of a message request that shape
// the prompt (model, system, messages, tools, tool_choice, thinking). The
// result is a CountOnly request. Generation settings (max_tokens, sampling,
// stream) are not part of this endpoint and are ignored if sent.
func DecodeCountTokensRequest(body []byte) (request.Request, error) {
	var w messagesRequest
	if err := wirejson.Unmarshal(body, &w); err != nil {
		return request.Request{}, err
	}
	req, err := w.request()
	if err != nil {
		return request.Request{}, err
	}
	req.CountOnly = true
	if err := req.Validate(); err != nil {
		return request.Request{}, fmt.Errorf("anthropic: %w", err)
	}
	return req, nil
}

// request maps the fields that shape the prompt.
func (w *messagesRequest) request() (request.Request, error) {
	if w.Model == "" {
		return request.Request{}, fault.ParamErrorf("model", "model is required")
	}
	req := request.Request{Model: w.Model, Chat: true}
	sys, err := system(w.System)
	if err != nil {
		return req, err
	}
	if w.Messages == nil {
		return req, fault.ParamErrorf("messages", "messages is required")
	}
	msgs, err := messages(w.Messages)
	if err != nil {
		return req, err
	}
	if sys != nil {
		msgs = append([]request.Message{*sys}, msgs...)
	}
	req.Messages = msgs
	if req.Tools, err = tools(w.Tools); err != nil {
		return req, err
	}
	if req.ToolChoice, err = w.ToolChoice.choice(req.Tools); err != nil {
		return req, err
	}
	if req.TemplateKwargs, err = w.Thinking.kwargs(w.MaxTokens); err != nil {
		return req, err
	}
	if req.JSONSchema, err = w.OutputConfig.schema(); err != nil {
		return req, err
	}
	return req, nil
}

// sampling maps the sampling and stopping fields onto s.
func (w *messagesRequest) sampling(s request.Sampling) (request.Sampling, error) {
	// Anthropic's ranges, which are narrower than infer's for temperature.
	if t := w.Temperature; t != nil {
		if math.IsNaN(*t) || *t < 0 || *t > 1 {
			return s, fault.ParamErrorf("temperature", "temperature must be between 0 and 1, got %v", *t)
		}
		s.Temperature = t
	}
	if p := w.TopP; p != nil {
		if math.IsNaN(*p) || *p < 0 || *p > 1 {
			return s, fault.ParamErrorf("top_p", "top_p must be between 0 and 1, got %v", *p)
		}
		s.TopP = p
	}
	if k := w.TopK; k != nil {
		if *k < 0 || *k > 1<<20 {
			return s, fault.ParamErrorf("top_k", "top_k must be between 0 and %d, got %d", 1<<20, *k)
		}
		s.TopK = int(*k)
	}
	if len(w.StopSequences) > request.MaxStopSequences {
		return s, fault.ParamErrorf("stop_sequences", "at most %d stop sequences are allowed, got %d", request.MaxStopSequences, len(w.StopSequences))
	}
	for i, st := range w.StopSequences {
		if st == "" {
			return s, fault.ParamErrorf("stop_sequences", "stop_sequences[%d] is empty", i)
		}
	}
	if len(w.StopSequences) > 0 {
		s.Stop = w.StopSequences
	}
	return s, nil
}

// system accepts a string or an array of text blocks, joined with
// newlines; nil means no system prompt.
func system(raw json.RawMessage) (*request.Message, error) {
	if wirejson.IsNull(raw) {
		return nil, nil
	}
	text, err := textContent(raw, "system")
	if err != nil {
		return nil, err
	}
	return &request.Message{Role: request.RoleSystem, Content: text}, nil
}

// textContent accepts a string or an array of text blocks.
func textContent(raw json.RawMessage, param string) (string, error) {
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fault.ParamErrorf(param, "%s is not a valid JSON string: %v", param, err)
		}
		return s, nil
	}
	blocks, err := blockList(raw, param)
	if err != nil {
		return "", err
	}
	texts := make([]string, 0, len(blocks))
	for j, b := range blocks {
		p := fmt.Sprintf("%s[%d]", param, j)
		if b.Type != "text" {
			return "", refuseBlock(p, b.Type, "text blocks")
		}
		if b.Text == nil {
			return "", fault.ParamErrorf(p+".text", "%s is a text block without text", p)
		}
		texts = append(texts, *b.Text)
	}
	return strings.Join(texts, "\n"), nil
}

func blockList(raw json.RawMessage, param string) ([]block, error) {
	var blocks []block
	if raw[0] != '[' {
		return nil, fault.ParamErrorf(param, "%s must be a string or an array of content blocks", param)
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fault.ParamErrorf(param, "%s must be a string or an array of content blocks: %v", param, fieldError(err))
	}
	return blocks, nil
}

// refuseBlock explains why a block of type typ cannot appear where only
// what is allowed.
func refuseBlock(param, typ, allowed string) error {
	switch typ {
	case "image", "document", "search_result", "container_upload":
		return fault.ParamErrorf(param, "%s is a content block of type %s; this server serves text models and accepts only %s here", param, fault.Quote(typ), allowed)
	case "":
		return fault.ParamErrorf(param, "%s has no type; this server accepts only %s here", param, allowed)
	}
	return fault.ParamErrorf(param, "%s has content block type %s, which is not supported here; this server accepts only %s", param, fault.Quote(typ), allowed)
}

// messages maps the conversation. A user turn becomes one tool message per
// tool_result block and one user message per run of text blocks, in their
// order; an assistant turn becomes one assistant message with its text,
// thinking and tool calls.
func messages(in []message) ([]request.Message, error) {
	out := make([]request.Message, 0, len(in))
	toolNames := map[string]string{} // tool_use id -> tool name, for tool results
	for i, m := range in {
		param := fmt.Sprintf("messages[%d]", i)
		if wirejson.IsNull(m.Content) {
			return nil, fault.ParamErrorf(param+".content", "%s.content is required", param)
		}
		var err error
		switch m.Role {
		case "user":
			out, err = userTurn(out, m.Content, param+".content", toolNames)
		case "assistant":
			if i == len(in)-1 {
				return nil, fault.ParamErrorf(param+".role", "%s: a final assistant message (a prefill for the answer to continue) is not supported; end the conversation with a user message", param)
			}
			out, err = assistantTurn(out, m.Content, param+".content", toolNames)
		case "system":
			var text string
			text, err = textContent(m.Content, param+".content")
			out = append(out, request.Message{Role: request.RoleSystem, Content: text})
		case "":
			return nil, fault.ParamErrorf(param+".role", "%s.role is required", param)
		default:
			return nil, fault.ParamErrorf(param+".role", "%s.role must be \"user\" or \"assistant\", got %s", param, fault.Quote(m.Role))
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func userTurn(out []request.Message, raw json.RawMessage, param string, toolNames map[string]string) ([]request.Message, error) {
	if raw[0] == '"' {
		text, err := textContent(raw, param)
		return append(out, request.Message{Role: request.RoleUser, Content: text}), err
	}
	blocks, err := blockList(raw, param)
	if err != nil {
		return nil, err
	}
	var texts []string
	flush := func() {
		if texts != nil {
			out = append(out, request.Message{Role: request.RoleUser, Content: strings.Join(texts, "\n")})
			texts = nil
		}
	}
	for j, b := range blocks {
		p := fmt.Sprintf("%s[%d]", param, j)
		switch b.Type {
		case "text":
			if b.Text == nil {
				return nil, fault.ParamErrorf(p+".text", "%s is a text block without text", p)
			}
			texts = append(texts, *b.Text)
		case "tool_result":
			if b.ToolUseID == "" {
				return nil, fault.ParamErrorf(p+".tool_use_id", "%s.tool_use_id is required", p)
			}
			content := ""
			if !wirejson.IsNull(b.Content) {
				if content, err = textContent(b.Content, p+".content"); err != nil {
					return nil, err
				}
			}
			flush()
			out = append(out, request.Message{Role: request.RoleTool, Content: content, ToolCallID: b.ToolUseID, Name: toolNames[b.ToolUseID]})
		default:
			return nil, refuseBlock(p, b.Type, "text and tool_result blocks in user messages")
		}
	}
	flush()
	if len(blocks) == 0 {
		out = append(out, request.Message{Role: request.RoleUser})
	}
	return out, nil
}

func assistantTurn(out []request.Message, raw json.RawMessage, param string, toolNames map[string]string) ([]request.Message, error) {
	msg := request.Message{Role: request.RoleAssistant}
	if raw[0] == '"' {
		text, err := textContent(raw, param)
		msg.Content = text
		return append(out, msg), err
	}
	blocks, err := blockList(raw, param)
	if err != nil {
		return nil, err
	}
	var texts, thoughts []string
	for j, b := range blocks {
		p := fmt.Sprintf("%s[%d]", param, j)
		switch b.Type {
		case "text":
			if b.Text == nil {
				return nil, fault.ParamErrorf(p+".text", "%s is a text block without text", p)
			}
			texts = append(texts, *b.Text)
		case "thinking":
			if b.Thinking == nil {
				return nil, fault.ParamErrorf(p+".thinking", "%s is a thinking block without thinking", p)
			}
			thoughts = append(thoughts, *b.Thinking)
		case "redacted_thinking":
			// Opaque to us (it carries another provider's encrypted
			// reasoning): nothing to render.
		case "tool_use":
			if b.ID == "" {
				return nil, fault.ParamErrorf(p+".id", "%s.id is required", p)
			}
			if b.Name == "" {
				return nil, fault.ParamErrorf(p+".name", "%s.name is required", p)
			}
			args, err := wirejson.Object(b.Input, p+".input")
			if err != nil {
				return nil, err
			}
			toolNames[b.ID] = b.Name
			msg.ToolCalls = append(msg.ToolCalls, request.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		default:
			return nil, refuseBlock(p, b.Type, "text, thinking and tool_use blocks in assistant messages")
		}
	}
	msg.Content = strings.Join(texts, "\n")
	msg.ReasoningContent = strings.Join(thoughts, "\n")
	return append(out, msg), nil
}

// tools maps client tools. Anthropic's server tools (web search, code
// execution, computer use...) run on Anthropic's side and are refused.
func tools(in []tool) ([]request.Tool, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]request.Tool, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, t := range in {
		p := fmt.Sprintf("tools[%d]", i)
		if t.Type != "" && t.Type != "custom" {
			return nil, fault.ParamErrorf(p+".type", "%s.type %s is a server tool, which this server does not run; offer client tools with a name and an input_schema", p, fault.Quote(t.Type))
		}
		if t.Name == "" {
			return nil, fault.ParamErrorf(p+".name", "%s.name is required", p)
		}
		if seen[t.Name] {
			return nil, fault.ParamErrorf(p+".name", "%s names tool %s a second time", p, fault.Quote(t.Name))
		}
		seen[t.Name] = true
		if wirejson.IsNull(t.InputSchema) {
			return nil, fault.ParamErrorf(p+".input_schema", "%s.input_schema is required", p)
		}
		if t.InputSchema[0] != '{' {
			return nil, fault.ParamErrorf(p+".input_schema", "%s.input_schema must be a JSON Schema object", p)
		}
		out = append(out, request.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return out, nil
}

// choice maps tool_choice: auto, any (some tool), tool (the named one),
// none.
func (c *toolChoice) choice(offered []request.Tool) (request.ToolChoice, error) {
	if c == nil {
		return request.ToolChoice{}, nil
	}
	switch c.Type {
	case "auto":
		return request.ToolChoice{Mode: "auto"}, nil
	case "none":
		return request.ToolChoice{Mode: "none"}, nil
	case "any":
		if len(offered) == 0 {
			return request.ToolChoice{}, fault.ParamErrorf("tool_choice", "tool_choice \"any\" needs tools")
		}
		return request.ToolChoice{Mode: "required"}, nil
	case "tool":
		if c.Name == "" {
			return request.ToolChoice{}, fault.ParamErrorf("tool_choice.name", "tool_choice of type \"tool\" needs a name")
		}
		for _, t := range offered {
			if t.Name == c.Name {
				return request.ToolChoice{Mode: "function", Name: c.Name}, nil
			}
		}
		return request.ToolChoice{}, fault.ParamErrorf("tool_choice.name", "tool_choice names tool %s, which is not among the tools", fault.Quote(c.Name))
	}
	return request.ToolChoice{}, fault.ParamErrorf("tool_choice.type", "tool_choice.type must be \"auto\", \"any\", \"tool\" or \"none\", got %s", fault.Quote(c.Type))
}

// kwargs maps thinking to the chat template's enable_thinking: enabled and
// adaptive turn it on, disabled turns it off, and no thinking field leaves
// the template's default.
func (t *thinking) kwargs(maxTokens *int64) (map[string]any, error) {
	if t == nil {
		return nil, nil
	}
	switch t.Type {
	case "enabled":
		if t.BudgetTokens == nil {
			return nil, fault.ParamErrorf("thinking.budget_tokens", "thinking.budget_tokens is required when thinking is enabled")
		}
		b := *t.BudgetTokens
		if b < 1 {
			return nil, fault.ParamErrorf("thinking.budget_tokens", "thinking.budget_tokens must be positive, got %d", b)
		}
		if maxTokens != nil && b >= *maxTokens {
			return nil, fault.ParamErrorf("thinking.budget_tokens", "thinking.budget_tokens (%d) must be less than max_tokens (%d)", b, *maxTokens)
		}
		return map[string]any{"enable_thinking": true}, nil
	case "adaptive":
		return map[string]any{"enable_thinking": true}, nil
	case "disabled":
		return map[string]any{"enable_thinking": false}, nil
	}
	return nil, fault.ParamErrorf("thinking.type", "thinking.type must be \"enabled\", \"adaptive\" or \"disabled\", got %s", fault.Quote(t.Type))
}

// schema maps output_config.format to a JSON Schema constraint.
func (o *outputConfig) schema() (json.RawMessage, error) {
	if o == nil || o.Format == nil {
		return nil, nil
	}
	if o.Format.Type != "json_schema" {
		return nil, fault.ParamErrorf("output_config.format.type", "output_config.format.type must be \"json_schema\", got %s", fault.Quote(o.Format.Type))
	}
	if wirejson.IsNull(o.Format.Schema) || o.Format.Schema[0] != '{' {
		return nil, fault.ParamErrorf("output_config.format.schema", "output_config.format.schema must be a JSON Schema object")
	}
	return o.Format.Schema, nil
}

// fieldError words a nested decoding error.
func fieldError(err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
		return fmt.Sprintf("field %s must be %s, not a JSON %s", fault.Clip(te.Field), wirejson.Expects(te), fault.Clip(te.Value))
	}
	return err.Error()
}
