package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/wirejson"
	"github.com/skulk/skulk/internal/serving/request"
)

// MaxTokensLimit bounds max_tokens (and max_completion_tokens). It is far
// above any context window we serve; a larger value is a client bug, refused
// before anything sizes a buffer from it.
const MaxTokensLimit = 1 << 20

// Decoded is a decoded request: the normalized request plus the transport
// options that stay in the HTTP layer.
type Decoded struct {
	Request      request.Request
	Stream       bool
	IncludeUsage bool // stream_options.include_usage: end the stream with a usage chunk
}

// chatRequest is the wire shape of POST /v1/chat/completions. Fields kept as
// json.RawMessage take more than one JSON type and are decoded by hand.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Tools               []tool          `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ResponseFormat      *responseFormat `json:"response_format"`
	Logprobs            *bool           `json:"logprobs"`
	TopLogprobs         *int64          `json:"top_logprobs"`
	ChatTemplateKwargs  map[string]any  `json:"chat_template_kwargs"`
	Modalities          []string        `json:"modalities"`
	Audio               json.RawMessage `json:"audio"`
	common
}

// common holds the fields both endpoints share.
type common struct {
	Temperature       *float64           `json:"temperature"`
	TopP              *float64           `json:"top_p"`
	TopK              *int64             `json:"top_k"`
	MinP              *float64           `json:"min_p"`
	RepeatPenalty     *float64           `json:"repeat_penalty"`
	RepetitionPenalty *float64           `json:"repetition_penalty"`
	PresencePenalty   *float64           `json:"presence_penalty"`
	FrequencyPenalty  *float64           `json:"frequency_penalty"`
	Seed              *int64             `json:"seed"`
	Stop              json.RawMessage    `json:"stop"`
	N                 *int64             `json:"n"`
	Stream            *bool              `json:"stream"`
	StreamOptions     *streamOptions     `json:"stream_options"`
	LogitBias         map[string]float64 `json:"logit_bias"`

	// Accepted and ignored, but type-checked.
	User              *string         `json:"user"`
	Metadata          map[string]any  `json:"metadata"`
	Store             *bool           `json:"store"`
	ServiceTier       *string         `json:"service_tier"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	ReasoningEffort   *string         `json:"reasoning_effort"`
	Prediction        json.RawMessage `json:"prediction"`
}

type streamOptions struct {
	IncludeUsage *bool `json:"include_usage"`
}

type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name"`
	ToolCalls        []toolCall      `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	ReasoningContent string          `json:"reasoning_content"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // a string; an object is tolerated
}

type contentPart struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

type tool struct {
	Type     string       `json:"type"`
	Function *functionDef `json:"function"`
}

type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema"`
}

type jsonSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// DecodeChatRequest decodes and validates a POST /v1/chat/completions body.
// Every error is a *fault.Error of class invalid_request naming the field.
func DecodeChatRequest(body []byte) (Decoded, error) {
	var w chatRequest
	if err := wirejson.Unmarshal(body, &w); err != nil {
		return Decoded{}, err
	}
	req := request.Request{Model: w.Model, Chat: true}
	if w.Messages == nil {
		return Decoded{}, fault.ParamErrorf("messages", "messages is required")
	}
	msgs, err := messages(w.Messages)
	if err != nil {
		return Decoded{}, err
	}
	req.Messages = msgs

	maxTokens := w.MaxCompletionTokens
	param := "max_completion_tokens"
	if maxTokens == nil {
		maxTokens, param = w.MaxTokens, "max_tokens"
	}
	if req.Sampling, err = w.common.sampling(maxTokens, param); err != nil {
		return Decoded{}, err
	}
	if w.Logprobs != nil {
		req.Sampling.Logprobs = *w.Logprobs
	}
	if w.TopLogprobs != nil {
		n := *w.TopLogprobs
		if n < 0 || n > request.MaxTopLogprobs {
			return Decoded{}, fault.ParamErrorf("top_logprobs", "top_logprobs must be between 0 and %d, got %d", request.MaxTopLogprobs, n)
		}
		if n > 0 && !req.Sampling.Logprobs {
			return Decoded{}, fault.ParamErrorf("top_logprobs", "top_logprobs requires logprobs to be true")
		}
		req.Sampling.TopLogprobs = int(n)
	}
	if req.Tools, err = tools(w.Tools); err != nil {
		return Decoded{}, err
	}
	if req.ToolChoice, err = toolChoice(w.ToolChoice, req.Tools); err != nil {
		return Decoded{}, err
	}
	if req.JSONSchema, err = w.ResponseFormat.schema(); err != nil {
		return Decoded{}, err
	}
	for _, m := range w.Modalities {
		if m != "text" {
			return Decoded{}, fault.ParamErrorf("modalities", "modality %s is not supported; this server produces text only", fault.Quote(m))
		}
	}
	if !wirejson.IsNull(w.Audio) {
		return Decoded{}, fault.ParamErrorf("audio", "audio output is not supported")
	}
	if len(w.ChatTemplateKwargs) > 0 {
		req.TemplateKwargs = w.ChatTemplateKwargs
	}
	req.TemplateKwargs = withEffort(req.TemplateKwargs, w.ReasoningEffort)
	return w.common.finish(req)
}

// withEffort passes reasoning_effort low, medium or high to the template
// as the variable of that name (gpt-oss's template reads it); other values
// are ignored, and chat_template_kwargs' own reasoning_effort wins.
func withEffort(kwargs map[string]any, effort *string) map[string]any {
	if effort == nil {
		return kwargs
	}
	switch *effort {
	case "low", "medium", "high":
	default:
		return kwargs
	}
	if _, set := kwargs["reasoning_effort"]; set {
		return kwargs
	}
	out := make(map[string]any, len(kwargs)+1)
	for k, v := range kwargs {
		out[k] = v
	}
	out["reasoning_effort"] = *effort
	return out
}

// completionRequest is the wire shape of POST /v1/completions.
type completionRequest struct {
	Model     string          `json:"model"`
	Prompt    json.RawMessage `json:"prompt"`
	MaxTokens *int64          `json:"max_tokens"`
	Logprobs  *int64          `json:"logprobs"`
	BestOf    *int64          `json:"best_of"`
	Echo      *bool           `json:"echo"`
	Suffix    *string         `json:"suffix"`
	common
}

// DecodeCompletionRequest decodes and validates a POST /v1/completions body.
// Every error is a *fault.Error of class invalid_request naming the field.
func DecodeCompletionRequest(body []byte) (Decoded, error) {
	var w completionRequest
	if err := wirejson.Unmarshal(body, &w); err != nil {
		return Decoded{}, err
	}
	req := request.Request{Model: w.Model}
	prompt, err := prompt(w.Prompt)
	if err != nil {
		return Decoded{}, err
	}
	req.Prompt = prompt
	if req.Sampling, err = w.common.sampling(w.MaxTokens, "max_tokens"); err != nil {
		return Decoded{}, err
	}
	if w.Logprobs != nil {
		n := *w.Logprobs
		if n < 0 || n > request.MaxTopLogprobs {
			return Decoded{}, fault.ParamErrorf("logprobs", "logprobs must be between 0 and %d, got %d", request.MaxTopLogprobs, n)
		}
		req.Sampling.Logprobs = true
		req.Sampling.TopLogprobs = int(n)
	}
	switch {
	case w.BestOf != nil && *w.BestOf != 1:
		return Decoded{}, fault.ParamErrorf("best_of", "best_of must be 1; this server generates one completion per request")
	case w.Echo != nil && *w.Echo:
		return Decoded{}, fault.ParamErrorf("echo", "echo is not supported")
	case w.Suffix != nil && *w.Suffix != "":
		return Decoded{}, fault.ParamErrorf("suffix", "suffix is not supported")
	}
	return w.common.finish(req)
}

func messages(in []chatMessage) ([]request.Message, error) {
	out := make([]request.Message, 0, len(in))
	for i, m := range in {
		role := request.Role(m.Role)
		if role == "developer" {
			role = request.RoleSystem
		}
		content, err := messageContent(m.Content, fmt.Sprintf("messages[%d].content", i))
		if err != nil {
			return nil, err
		}
		msg := request.Message{
			Role:             role,
			Content:          content,
			ReasoningContent: m.ReasoningContent,
			ToolCallID:       m.ToolCallID,
			Name:             m.Name,
		}
		for j, tc := range m.ToolCalls {
			p := fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
			if tc.Type != "" && tc.Type != "function" {
				return nil, fault.ParamErrorf(p+".type", "%s.type must be \"function\", got %s", p, fault.Quote(tc.Type))
			}
			if tc.Function.Name == "" {
				return nil, fault.ParamErrorf(p+".function.name", "%s.function.name is required", p)
			}
			args, err := wirejson.Arguments(tc.Function.Arguments, p+".function.arguments")
			if err != nil {
				return nil, err
			}
			msg.ToolCalls = append(msg.ToolCalls, request.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
		}
		out = append(out, msg)
	}
	return out, nil
}

// messageContent accepts a string, null, or an array of text parts, which
// are joined with newlines.
func messageContent(raw json.RawMessage, param string) (string, error) {
	if wirejson.IsNull(raw) {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fault.ParamErrorf(param, "%s is not a valid JSON string: %v", param, err)
		}
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fault.ParamErrorf(param, "%s must be a string or an array of content parts", param)
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		switch p.Type {
		case "text":
			if p.Text == nil {
				return "", fault.ParamErrorf(param, "%s[%d] is a text part without text", param, j)
			}
			texts = append(texts, *p.Text)
		case "image_url", "input_image", "input_audio", "file", "video_url":
			return "", fault.ParamErrorf(param, "%s[%d] is a content part of type %s; this server accepts text parts only", param, j, fault.Quote(p.Type))
		default:
			return "", fault.ParamErrorf(param, "%s[%d] has unknown content part type %s; this server accepts text parts only", param, j, fault.Quote(p.Type))
		}
	}
	return strings.Join(texts, "\n"), nil
}

func tools(in []tool) ([]request.Tool, error) {
	out := make([]request.Tool, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, t := range in {
		p := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return nil, fault.ParamErrorf(p+".type", "%s.type must be \"function\", got %s", p, fault.Quote(t.Type))
		}
		if t.Function == nil || t.Function.Name == "" {
			return nil, fault.ParamErrorf(p+".function.name", "%s.function.name is required", p)
		}
		f := t.Function
		if seen[f.Name] {
			return nil, fault.ParamErrorf(p+".function.name", "%s names function %s a second time", p, fault.Quote(f.Name))
		}
		seen[f.Name] = true
		params, err := wirejson.Schema(f.Parameters, p+".function.parameters")
		if err != nil {
			return nil, err
		}
		out = append(out, request.Tool{Name: f.Name, Description: f.Description, Parameters: params})
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// toolChoice accepts "none", "auto", "required" or
// {"type":"function","function":{"name":...}} naming an offered tool.
func toolChoice(raw json.RawMessage, offered []request.Tool) (request.ToolChoice, error) {
	if wirejson.IsNull(raw) {
		return request.ToolChoice{}, nil
	}
	var choice request.ToolChoice
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return choice, fault.ParamErrorf("tool_choice", "tool_choice is not a valid JSON string: %v", err)
		}
		switch s {
		case "none", "auto", "required":
			choice.Mode = s
		default:
			return choice, fault.ParamErrorf("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or an object naming a function, got %s", fault.Quote(s))
		}
	} else {
		var obj struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil || obj.Type != "function" || obj.Function.Name == "" {
			return choice, fault.ParamErrorf("tool_choice", `tool_choice must be "none", "auto", "required" or {"type":"function","function":{"name":...}}`)
		}
		choice = request.ToolChoice{Mode: "function", Name: obj.Function.Name}
	}
	switch choice.Mode {
	case "required":
		if len(offered) == 0 {
			return choice, fault.ParamErrorf("tool_choice", "tool_choice \"required\" needs tools")
		}
	case "function":
		found := false
		for _, t := range offered {
			found = found || t.Name == choice.Name
		}
		if !found {
			return choice, fault.ParamErrorf("tool_choice", "tool_choice names function %s, which is not among the tools", fault.Quote(choice.Name))
		}
	}
	return choice, nil
}

// anyObject returns the schema that admits any JSON object (request.Request's
// JSONSchema convention).
func anyObject() json.RawMessage { return json.RawMessage(`{}`) }

func (f *responseFormat) schema() (json.RawMessage, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case "", "text":
		return nil, nil
	case "json_object":
		return anyObject(), nil
	case "json_schema":
		if f.JSONSchema == nil || wirejson.IsNull(f.JSONSchema.Schema) {
			return anyObject(), nil
		}
		if bytes.TrimSpace(f.JSONSchema.Schema)[0] != '{' {
			return nil, fault.ParamErrorf("response_format.json_schema.schema", "response_format.json_schema.schema must be a JSON Schema object")
		}
		return f.JSONSchema.Schema, nil
	}
	return nil, fault.ParamErrorf("response_format.type", "response_format.type must be \"text\", \"json_object\" or \"json_schema\", got %s", fault.Quote(f.Type))
}

// prompt accepts a string or an array holding one string.
func prompt(raw json.RawMessage) (string, error) {
	if wirejson.IsNull(raw) {
		return "", fault.ParamErrorf("prompt", "prompt is required")
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fault.ParamErrorf("prompt", "prompt is not a valid JSON string: %v", err)
		}
		return s, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", fault.ParamErrorf("prompt", "prompt must be a string or an array of one string")
	}
	if len(list) != 1 {
		return "", fault.ParamErrorf("prompt", "prompt must hold exactly one string; got an array of %d (batch prompts are not supported)", len(list))
	}
	if err := json.Unmarshal(list[0], &s); err != nil {
		return "", fault.ParamErrorf("prompt", "prompt must be a string or an array of one string (token arrays are not supported)")
	}
	return s, nil
}

// sampling maps the shared sampling fields; maxTokens and its field name
// come from the caller because chat has two spellings.
func (c *common) sampling(maxTokens *int64, param string) (request.Sampling, error) {
	var s request.Sampling
	if maxTokens != nil {
		n := *maxTokens
		if n < 1 || n > MaxTokensLimit {
			return s, fault.ParamErrorf(param, "%s must be between 1 and %d, got %d", param, MaxTokensLimit, n)
		}
		s.MaxTokens = int(n)
	}
	s.Temperature, s.TopP = c.Temperature, c.TopP
	if c.TopK != nil {
		if *c.TopK < 0 || *c.TopK > 1<<20 {
			return s, fault.ParamErrorf("top_k", "top_k must be between 0 and %d, got %d", 1<<20, *c.TopK)
		}
		s.TopK = int(*c.TopK)
	}
	if c.MinP != nil {
		s.MinP = *c.MinP
	}
	switch {
	case c.RepeatPenalty != nil && c.RepetitionPenalty != nil:
		return s, fault.ParamErrorf("repetition_penalty", "give repeat_penalty or repetition_penalty, not both")
	case c.RepeatPenalty != nil:
		s.RepeatPenalty = *c.RepeatPenalty
	case c.RepetitionPenalty != nil:
		s.RepeatPenalty = *c.RepetitionPenalty
	}
	if c.PresencePenalty != nil {
		s.PresencePenalty = *c.PresencePenalty
	}
	if c.FrequencyPenalty != nil {
		s.FrequencyPenalty = *c.FrequencyPenalty
	}
	// A seed of -1 means "unseeded", as in llama.cpp; other values keep their
	// bits.
	if c.Seed != nil && *c.Seed != -1 {
		seed := uint64(*c.Seed)
		s.Seed = &seed
	}
	var err error
	s.Stop, err = wirejson.Stop(c.Stop, "stop")
	return s, err
}

// finish checks the shared refusals, sets the transport options, and
// validates the request.
func (c *common) finish(req request.Request) (Decoded, error) {
	if c.N != nil && *c.N != 1 {
		return Decoded{}, fault.ParamErrorf("n", "n must be 1; this server generates one choice per request, got %d", *c.N)
	}
	if len(c.LogitBias) > 0 {
		return Decoded{}, fault.ParamErrorf("logit_bias", "logit_bias is not supported")
	}
	d := Decoded{Request: req}
	if c.Stream != nil {
		d.Stream = *c.Stream
	}
	if d.Stream && c.StreamOptions != nil && c.StreamOptions.IncludeUsage != nil {
		d.IncludeUsage = *c.StreamOptions.IncludeUsage
	}
	if err := d.Request.Validate(); err != nil {
		return Decoded{}, fmt.Errorf("openai: %w", err)
	}
	return d, nil
}
