package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/openai"
	"github.com/skulk/skulk/internal/serving/api/wirejson"
	"github.com/skulk/skulk/internal/serving/request"
)

// MaxOutputTokensLimit bounds max_output_tokens, as openai.MaxTokensLimit
// bounds max_tokens: far above any served context, refused before anything
// sizes a buffer from it.
const MaxOutputTokensLimit = openai.MaxTokensLimit

// Decoded is a decoded POST /v1/responses body: the parts that become the
// normalized request, the transport options that stay in the HTTP layer,
// and the settings the Response object echoes back.
type Decoded struct {
	Model string
	// Instructions become a system message at the head of the prompt; as
	// in OpenAI's API they are not carried into a continuation.
	Instructions *string
	// Input is the request's own input items as messages.
	Input []request.Message
	// PreviousResponseID names a stored response whose conversation this
	// request continues ("" when none).
	PreviousResponseID string

	Tools      []request.Tool
	ToolChoice request.ToolChoice
	Sampling   request.Sampling
	JSONSchema json.RawMessage
	// TemplateKwargs carries enable_thinking from reasoning.effort.
	TemplateKwargs map[string]any

	Stream bool
	// Store is false when the client asked that the response not be kept
	// for previous_response_id (the default is true).
	Store bool

	// Echo holds the settings the Response object reports back.
	Echo Echo
}

// Echo is what a Response object reports of its request.
type Echo struct {
	Instructions      *string
	MaxOutputTokens   *int64
	Metadata          map[string]string
	ParallelToolCalls bool
	Temperature       *float64
	TopP              *float64
	Tools             []FunctionTool
	ToolChoice        any // "auto" | "none" | "required" | ToolChoiceFunction
	Text              TextConfig
	Reasoning         Reasoning
	User              string
}

// wireRequest is the wire shape of POST /v1/responses. Fields kept as
// json.RawMessage take more than one JSON type and are decoded by hand.
type wireRequest struct {
	Model              string             `json:"model"`
	Input              json.RawMessage    `json:"input"`
	Instructions       *string            `json:"instructions"`
	Tools              []tool             `json:"tools"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	MaxOutputTokens    *int64             `json:"max_output_tokens"`
	Temperature        *float64           `json:"temperature"`
	TopP               *float64           `json:"top_p"`
	TopLogprobs        *int64             `json:"top_logprobs"`
	Include            []string           `json:"include"`
	Text               *textConfig        `json:"text"`
	Reasoning          *reasoningConfig   `json:"reasoning"`
	Stream             *bool              `json:"stream"`
	Store              *bool              `json:"store"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Metadata           map[string]string  `json:"metadata"`
	ParallelToolCalls  *bool              `json:"parallel_tool_calls"`
	Background         *bool              `json:"background"`
	Conversation       json.RawMessage    `json:"conversation"`
	Prompt             json.RawMessage    `json:"prompt"`
	Truncation         *string            `json:"truncation"`
	StreamOptions      *streamOptions     `json:"stream_options"`
	User               *string            `json:"user"`
	ServiceTier        *string            `json:"service_tier"`
	SafetyIdentifier   *string            `json:"safety_identifier"`
	PromptCacheKey     *string            `json:"prompt_cache_key"`
	PromptCacheRetain  *string            `json:"prompt_cache_retention"`
	MaxToolCalls       *int64             `json:"max_tool_calls"`
	ContextManagement  []json.RawMessage  `json:"context_management"`
	LogitBias          map[string]float64 `json:"logit_bias"`
}

type streamOptions struct {
	IncludeObfuscation *bool `json:"include_obfuscation"`
}

type tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

type textConfig struct {
	Format    *textFormat `json:"format"`
	Verbosity *string     `json:"verbosity"`
}

type textFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

type reasoningConfig struct {
	Effort          *string `json:"effort"`
	Summary         *string `json:"summary"`
	GenerateSummary *string `json:"generate_summary"`
}

// inputItem is one element of an input list: a message (type "message" or
// none), a function_call, a function_call_output or a reasoning item.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Summary   []textPart      `json:"summary"`
}

type textPart struct {
	Type    string  `json:"type"`
	Text    *string `json:"text"`
	Refusal *string `json:"refusal"`
}

// DecodeRequest decodes and checks a POST /v1/responses body. Every error
// is a *fault.Error of class invalid_request, naming the field when one is
// at fault. The continuation of a previous response is resolved later, by
// [Continue].
func DecodeRequest(body []byte) (Decoded, error) {
	var w wireRequest
	if err := wirejson.Unmarshal(body, &w); err != nil {
		return Decoded{}, err
	}
	d := Decoded{Model: w.Model, Instructions: w.Instructions, Store: true}
	if w.Model == "" {
		return Decoded{}, fault.ParamErrorf("model", "model is required")
	}
	if err := w.refusals(); err != nil {
		return Decoded{}, err
	}
	var err error
	if d.Input, err = input(w.Input); err != nil {
		return Decoded{}, err
	}
	if w.PreviousResponseID != nil {
		d.PreviousResponseID = *w.PreviousResponseID
	}
	if w.Stream != nil {
		d.Stream = *w.Stream
	}
	if w.Store != nil {
		d.Store = *w.Store
	}
	if d.Sampling, err = w.sampling(); err != nil {
		return Decoded{}, err
	}
	var echoTools []FunctionTool
	if d.Tools, echoTools, err = tools(w.Tools); err != nil {
		return Decoded{}, err
	}
	var echoChoice any
	if d.ToolChoice, echoChoice, err = toolChoice(w.ToolChoice, d.Tools); err != nil {
		return Decoded{}, err
	}
	var echoText TextConfig
	if d.JSONSchema, echoText, err = w.Text.schema(); err != nil {
		return Decoded{}, err
	}
	var echoReasoning Reasoning
	if d.TemplateKwargs, echoReasoning, err = w.Reasoning.kwargs(); err != nil {
		return Decoded{}, err
	}
	d.Echo = Echo{
		Instructions: w.Instructions, MaxOutputTokens: w.MaxOutputTokens, Metadata: w.Metadata,
		ParallelToolCalls: w.ParallelToolCalls == nil || *w.ParallelToolCalls,
		Temperature:       w.Temperature, TopP: w.TopP,
		Tools: echoTools, ToolChoice: echoChoice, Text: echoText, Reasoning: echoReasoning,
	}
	if w.User != nil {
		d.Echo.User = *w.User
	}
	return d, nil
}

// refusals checks the fields that ask for something this server cannot do.
func (w *wireRequest) refusals() error {
	switch {
	case w.Background != nil && *w.Background:
		return fault.ParamErrorf("background", "background responses are not supported; send the request without background and keep the connection open (or stream)")
	case !wirejson.IsNull(w.Conversation):
		return fault.ParamErrorf("conversation", "the Conversations API is not supported; continue a conversation with previous_response_id")
	case !wirejson.IsNull(w.Prompt):
		return fault.ParamErrorf("prompt", "stored prompt templates are not supported; send input and instructions")
	case len(w.LogitBias) > 0:
		return fault.ParamErrorf("logit_bias", "logit_bias is not supported")
	case w.Truncation != nil && *w.Truncation != "auto" && *w.Truncation != "disabled":
		return fault.ParamErrorf("truncation", "truncation must be \"auto\" or \"disabled\", got %s", fault.Quote(*w.Truncation))
	case w.PreviousResponseID != nil && *w.PreviousResponseID == "":
		return fault.ParamErrorf("previous_response_id", "previous_response_id must not be empty")
	}
	for i, inc := range w.Include {
		switch inc {
		case "message.output_text.logprobs", "reasoning.encrypted_content":
		default:
			// The other includables name outputs of hosted tools
			// (file search, code interpreter, images) this server never
			// produces; asking for them is harmless.
			if inc == "" {
				return fault.ParamErrorf("include", "include[%d] must not be empty", i)
			}
		}
	}
	return nil
}

// sampling maps max_output_tokens, temperature, top_p and the logprob
// settings.
func (w *wireRequest) sampling() (request.Sampling, error) {
	var s request.Sampling
	if w.MaxOutputTokens != nil {
		n := *w.MaxOutputTokens
		if n < 1 || n > MaxOutputTokensLimit {
			return s, fault.ParamErrorf("max_output_tokens", "max_output_tokens must be between 1 and %d, got %d", MaxOutputTokensLimit, n)
		}
		s.MaxTokens = int(n)
	}
	s.Temperature, s.TopP = w.Temperature, w.TopP
	for _, inc := range w.Include {
		if inc == "message.output_text.logprobs" {
			s.Logprobs = true
		}
	}
	if w.TopLogprobs != nil {
		n := *w.TopLogprobs
		if n < 0 || n > request.MaxTopLogprobs {
			return s, fault.ParamErrorf("top_logprobs", "top_logprobs must be between 0 and %d, got %d", request.MaxTopLogprobs, n)
		}
		s.TopLogprobs = int(n)
		if n > 0 {
			s.Logprobs = true
		}
	}
	return s, nil
}

// input accepts a string (one user message) or a list of input items.
func input(raw json.RawMessage) ([]request.Message, error) {
	raw = bytes.TrimSpace(raw)
	if wirejson.IsNull(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fault.ParamErrorf("input", "input is not a valid JSON string: %v", err)
		}
		return []request.Message{{Role: request.RoleUser, Content: s}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fault.ParamErrorf("input", "input must be a string or an array of input items")
	}
	var b historyBuilder
	for i, itemRaw := range items {
		p := fmt.Sprintf("input[%d]", i)
		var it inputItem
		if err := json.Unmarshal(itemRaw, &it); err != nil {
			if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" && te.Type != nil {
				field := p + "." + fault.Clip(te.Field)
				return nil, fault.ParamErrorf(field, "field %s must be %s, not a JSON %s", field, wirejson.Expects(te), fault.Clip(te.Value))
			}
			return nil, fault.ParamErrorf(p, "%s must be an input item object (a message, function_call, function_call_output or reasoning item)", p)
		}
		if err := b.add(it, p); err != nil {
			return nil, err
		}
	}
	return b.finish(), nil
}

// historyBuilder turns input items into messages: function_call items join
// the assistant message before them (or start one), and a reasoning item
// becomes the reasoning of the next assistant message.
type historyBuilder struct {
	msgs      []request.Message
	reasoning string // from reasoning items not yet attached
}

func (b *historyBuilder) add(it inputItem, p string) error {
	switch it.Type {
	case "", "message":
		return b.message(it, p)
	case "function_call":
		if it.CallID == "" {
			return fault.ParamErrorf(p+".call_id", "%s.call_id is required", p)
		}
		if it.Name == "" {
			return fault.ParamErrorf(p+".name", "%s.name is required", p)
		}
		args, err := wirejson.Arguments(it.Arguments, p+".arguments")
		if err != nil {
			return err
		}
		tc := request.ToolCall{ID: it.CallID, Name: it.Name, Arguments: args}
		if n := len(b.msgs); n > 0 && b.msgs[n-1].Role == request.RoleAssistant && b.reasoning == "" {
			b.msgs[n-1].ToolCalls = append(b.msgs[n-1].ToolCalls, tc)
			return nil
		}
		b.msgs = append(b.msgs, request.Message{Role: request.RoleAssistant, ReasoningContent: b.takeReasoning(), ToolCalls: []request.ToolCall{tc}})
	case "function_call_output":
		if it.CallID == "" {
			return fault.ParamErrorf(p+".call_id", "%s.call_id is required", p)
		}
		out, err := toolOutput(it.Output, p+".output")
		if err != nil {
			return err
		}
		b.msgs = append(b.msgs, request.Message{Role: request.RoleTool, ToolCallID: it.CallID, Content: out})
	case "reasoning":
		text, err := reasoningText(it, p)
		if err != nil {
			return err
		}
		b.reasoning += text
	case "item_reference":
		return fault.ParamErrorf(p+".type", "%s is an item_reference; this server cannot look items up by id: send the item itself or use previous_response_id", p)
	default:
		return fault.ParamErrorf(p+".type", "%s has type %s; this server accepts message, function_call, function_call_output and reasoning items", p, fault.Quote(it.Type))
	}
	return nil
}

func (b *historyBuilder) takeReasoning() string {
	r := b.reasoning
	b.reasoning = ""
	return r
}

func (b *historyBuilder) message(it inputItem, p string) error {
	var role request.Role
	switch it.Role {
	case "user":
		role = request.RoleUser
	case "assistant":
		role = request.RoleAssistant
	case "system", "developer":
		role = request.RoleSystem
	case "":
		return fault.ParamErrorf(p+".role", "%s.role is required", p)
	default:
		return fault.ParamErrorf(p+".role", "%s.role must be user, assistant, system or developer, got %s", p, fault.Quote(it.Role))
	}
	content, err := messageContent(it.Content, p+".content")
	if err != nil {
		return err
	}
	m := request.Message{Role: role, Content: content}
	if role == request.RoleAssistant {
		m.ReasoningContent = b.takeReasoning()
	}
	b.msgs = append(b.msgs, m)
	return nil
}

// finish returns the messages. Reasoning that no assistant message
// followed has nothing to attach to and is dropped.
func (b *historyBuilder) finish() []request.Message { return b.msgs }

// messageContent accepts a string or an array of text parts (input_text,
// output_text, refusal), joined with newlines.
func messageContent(raw json.RawMessage, param string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if wirejson.IsNull(raw) {
		return "", fault.ParamErrorf(param, "%s is required", param)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fault.ParamErrorf(param, "%s is not a valid JSON string: %v", param, err)
		}
		return s, nil
	}
	var parts []textPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fault.ParamErrorf(param, "%s must be a string or an array of content parts", param)
	}
	texts := make([]string, 0, len(parts))
	for j, part := range parts {
		switch part.Type {
		case "input_text", "output_text", "text":
			if part.Text == nil {
				return "", fault.ParamErrorf(param, "%s[%d] is a %s part without text", param, j, part.Type)
			}
			texts = append(texts, *part.Text)
		case "refusal":
			if part.Refusal == nil {
				return "", fault.ParamErrorf(param, "%s[%d] is a refusal part without refusal", param, j)
			}
			texts = append(texts, *part.Refusal)
		case "input_image", "input_file", "input_audio":
			return "", fault.ParamErrorf(param, "%s[%d] is a content part of type %s; this server accepts text parts only", param, j, fault.Quote(part.Type))
		default:
			return "", fault.ParamErrorf(param, "%s[%d] has unknown content part type %s; this server accepts input_text and output_text parts", param, j, fault.Quote(part.Type))
		}
	}
	return strings.Join(texts, "\n"), nil
}

// toolOutput accepts the output of a function_call_output item: a string or
// a list of input_text parts.
func toolOutput(raw json.RawMessage, param string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if wirejson.IsNull(raw) {
		return "", fault.ParamErrorf(param, "%s is required", param)
	}
	return messageContent(raw, param)
}

// reasoningText takes the text of a reasoning input item: its
// reasoning_text content, or else its summary.
func reasoningText(it inputItem, p string) (string, error) {
	var parts []textPart
	if !wirejson.IsNull(it.Content) {
		if err := json.Unmarshal(it.Content, &parts); err != nil {
			return "", fault.ParamErrorf(p+".content", "%s.content must be an array of reasoning_text parts", p)
		}
	}
	if len(parts) == 0 {
		parts = it.Summary
	}
	var sb strings.Builder
	for _, part := range parts {
		if part.Text != nil {
			sb.WriteString(*part.Text)
		}
	}
	return sb.String(), nil
}

// tools maps function tools; every other tool type names a hosted tool
// this server does not run.
func tools(in []tool) ([]request.Tool, []FunctionTool, error) {
	if len(in) == 0 {
		return nil, []FunctionTool{}, nil
	}
	out := make([]request.Tool, 0, len(in))
	echo := make([]FunctionTool, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, t := range in {
		p := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return nil, nil, fault.ParamErrorf(p+".type", "%s.type must be \"function\", got %s; this server runs no hosted tools", p, fault.Quote(t.Type))
		}
		if t.Name == "" {
			return nil, nil, fault.ParamErrorf(p+".name", "%s.name is required", p)
		}
		if seen[t.Name] {
			return nil, nil, fault.ParamErrorf(p+".name", "%s names function %s a second time", p, fault.Quote(t.Name))
		}
		seen[t.Name] = true
		params, err := wirejson.Schema(t.Parameters, p+".parameters")
		if err != nil {
			return nil, nil, err
		}
		desc := ""
		if t.Description != nil {
			desc = *t.Description
		}
		out = append(out, request.Tool{Name: t.Name, Description: desc, Parameters: params})
		echo = append(echo, FunctionTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params, Strict: t.Strict})
	}
	return out, echo, nil
}

// toolChoice accepts "none", "auto", "required" or {"type":"function",
// "name":...} naming an offered tool. It also returns the value the
// Response object echoes.
func toolChoice(raw json.RawMessage, offered []request.Tool) (request.ToolChoice, any, error) {
	raw = bytes.TrimSpace(raw)
	if wirejson.IsNull(raw) {
		return request.ToolChoice{}, "auto", nil
	}
	var choice request.ToolChoice
	var echo any
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return choice, nil, fault.ParamErrorf("tool_choice", "tool_choice is not a valid JSON string: %v", err)
		}
		switch s {
		case "none", "auto", "required":
			choice.Mode, echo = s, s
		default:
			return choice, nil, fault.ParamErrorf("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"name\":...}, got %s", fault.Quote(s))
		}
	} else {
		var obj struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil || obj.Type != "function" || obj.Name == "" {
			return choice, nil, fault.ParamErrorf("tool_choice", `tool_choice must be "none", "auto", "required" or {"type":"function","name":...}`)
		}
		choice = request.ToolChoice{Mode: "function", Name: obj.Name}
		echo = ToolChoiceFunction{Type: "function", Name: obj.Name}
	}
	switch choice.Mode {
	case "required":
		if len(offered) == 0 {
			return choice, nil, fault.ParamErrorf("tool_choice", "tool_choice \"required\" needs tools")
		}
	case "function":
		found := false
		for _, t := range offered {
			found = found || t.Name == choice.Name
		}
		if !found {
			return choice, nil, fault.ParamErrorf("tool_choice", "tool_choice names function %s, which is not among the tools", fault.Quote(choice.Name))
		}
	}
	return choice, echo, nil
}

// schema maps text.format to request.Request's JSONSchema convention (an
// empty object schema admits any JSON object).
func (t *textConfig) schema() (json.RawMessage, TextConfig, error) {
	echo := TextConfig{Format: TextFormat{Type: "text"}}
	if t == nil || t.Format == nil {
		return nil, echo, nil
	}
	if t.Verbosity != nil {
		echo.Verbosity = t.Verbosity
	}
	f := t.Format
	switch f.Type {
	case "", "text":
		return nil, echo, nil
	case "json_object":
		echo.Format = TextFormat{Type: "json_object"}
		return json.RawMessage(`{}`), echo, nil
	case "json_schema":
		schema := json.RawMessage(`{}`)
		if !wirejson.IsNull(f.Schema) {
			if bytes.TrimSpace(f.Schema)[0] != '{' {
				return nil, echo, fault.ParamErrorf("text.format.schema", "text.format.schema must be a JSON Schema object")
			}
			schema = f.Schema
		}
		echo.Format = TextFormat{Type: "json_schema", Name: f.Name, Description: f.Description, Schema: schema, Strict: f.Strict}
		return schema, echo, nil
	}
	return nil, echo, fault.ParamErrorf("text.format.type", "text.format.type must be \"text\", \"json_object\" or \"json_schema\", got %s", fault.Quote(f.Type))
}

// Reasoning efforts. Any effort but "none" turns the chat template's
// enable_thinking on; "none" turns it off; no effort leaves the template's
// default. low, medium and high also set the template's reasoning_effort.
var efforts = map[string]bool{"none": false, "minimal": true, "low": true, "medium": true, "high": true, "xhigh": true}

func (r *reasoningConfig) kwargs() (map[string]any, Reasoning, error) {
	if r == nil {
		return nil, Reasoning{}, nil
	}
	echo := Reasoning{Effort: r.Effort, Summary: r.Summary}
	if r.Summary == nil {
		echo.Summary = r.GenerateSummary
	}
	if r.Effort == nil {
		return nil, echo, nil
	}
	think, ok := efforts[*r.Effort]
	if !ok {
		return nil, echo, fault.ParamErrorf("reasoning.effort", "reasoning.effort must be one of none, minimal, low, medium, high, xhigh, got %s", fault.Quote(*r.Effort))
	}
	kw := map[string]any{"enable_thinking": think}
	switch *r.Effort {
	case "low", "medium", "high":
		kw["reasoning_effort"] = *r.Effort // the variable gpt-oss's template reads
	}
	return kw, echo, nil
}

// Continue builds the normalized request of d continuing history, the
// stored conversation of a previous response (nil when none): the
// instructions as a system message, then history, then d's input. It checks
// that every function_call_output answers a call made earlier in the
// conversation, and validates the result.
func Continue(history []request.Message, d Decoded) (request.Request, error) {
	msgs := make([]request.Message, 0, 1+len(history)+len(d.Input))
	if d.Instructions != nil && *d.Instructions != "" {
		msgs = append(msgs, request.Message{Role: request.RoleSystem, Content: *d.Instructions})
	}
	msgs = append(msgs, history...)
	msgs = append(msgs, d.Input...)
	if len(d.Input) == 0 {
		return request.Request{}, fault.ParamErrorf("input", "input is required: a string or a non-empty array of input items")
	}
	calls := make(map[string]string)
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			calls[tc.ID] = tc.Name
		}
	}
	for i := len(msgs) - len(d.Input); i < len(msgs); i++ {
		m := &msgs[i]
		if m.Role != request.RoleTool {
			continue
		}
		name, ok := calls[m.ToolCallID]
		if !ok {
			return request.Request{}, fault.ParamErrorf("input", "function_call_output for call_id %s answers no function_call in this conversation", fault.Quote(m.ToolCallID))
		}
		m.Name = name
	}
	req := request.Request{
		Model: d.Model, Chat: true, Messages: msgs,
		Tools: d.Tools, ToolChoice: d.ToolChoice, Sampling: d.Sampling,
		JSONSchema: d.JSONSchema, TemplateKwargs: d.TemplateKwargs,
	}
	if err := req.Validate(); err != nil {
		return request.Request{}, fmt.Errorf("responses: %w", err)
	}
	return req, nil
}
