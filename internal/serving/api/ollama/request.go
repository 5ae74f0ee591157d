package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/wirejson"
	"github.com/skulk/skulk/internal/serving/request"
)

// MaxTokensLimit bounds options.num_predict. It is far above any context
// window we serve; a larger value is a client bug, refused before anything
// sizes a buffer from it.
const MaxTokensLimit = 1 << 20

// maxTopK bounds options.top_k (far above any vocabulary).
const maxTopK = 1 << 20

// Decoded is a decoded generation request: the normalized request plus the
// transport options that stay in the HTTP layer.
type Decoded struct {
	Request request.Request
	// Stream is true unless the request said "stream": false (Ollama
	// streams by default).
	Stream bool
	// Load is Ollama's "load the model" idiom: a chat request with no
	// messages, or a generate request with an empty prompt. Nothing is
	// generated; the answer says done_reason "load" when the model has a
	// ready instance.
	Load bool
}

// chatRequest is the wire shape of POST /api/chat. Fields kept as
// json.RawMessage take more than one JSON type and are decoded by hand.
type chatRequest struct {
	Model    string    `json:"model"`
	Messages []message `json:"messages"`
	Tools    []tool    `json:"tools"`
	common
}

// generateRequest is the wire shape of POST /api/generate.
type generateRequest struct {
	Model    string            `json:"model"`
	Prompt   string            `json:"prompt"`
	System   string            `json:"system"`
	Template string            `json:"template"`
	Raw      bool              `json:"raw"`
	Suffix   string            `json:"suffix"`
	Images   []json.RawMessage `json:"images"`
	Context  []json.RawMessage `json:"context"`
	common
}

// common holds the fields both generation endpoints share.
type common struct {
	Format      json.RawMessage `json:"format"`
	Options     *options        `json:"options"`
	Stream      *bool           `json:"stream"`
	KeepAlive   json.RawMessage `json:"keep_alive"`
	Think       json.RawMessage `json:"think"`
	Logprobs    *bool           `json:"logprobs"`
	TopLogprobs *int64          `json:"top_logprobs"`
	// Accepted and ignored, but type-checked.
	Truncate *bool `json:"truncate"`
	Shift    *bool `json:"shift"`
}

type message struct {
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	Thinking   string            `json:"thinking"`
	Images     []json.RawMessage `json:"images"`
	ToolCalls  []toolCall        `json:"tool_calls"`
	ToolName   string            `json:"tool_name"`
	ToolCallID string            `json:"tool_call_id"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Index     *int            `json:"index"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // an object; a string holding one is tolerated
}

type tool struct {
	Type     string       `json:"type"`
	Function *functionDef `json:"function"`
}

type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// options is Ollama's "options" object (Modelfile parameters). Integer
// options are kept raw: Ollama clients send 40 and 40.0 alike.
type options struct {
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"top_p"`
	TopK             json.RawMessage `json:"top_k"`
	MinP             *float64        `json:"min_p"`
	Seed             json.RawMessage `json:"seed"`
	NumPredict       json.RawMessage `json:"num_predict"`
	Stop             json.RawMessage `json:"stop"`
	RepeatPenalty    *float64        `json:"repeat_penalty"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`

	// Sampling methods the engine does not have: accepted at their neutral
	// values only.
	TypicalP    *float64        `json:"typical_p"`
	TfsZ        *float64        `json:"tfs_z"`
	Mirostat    json.RawMessage `json:"mirostat"`
	MirostatTau *float64        `json:"mirostat_tau"`
	MirostatEta *float64        `json:"mirostat_eta"`

	// Accepted and ignored, but type-checked (see the package doc for why).
	RepeatLastN     json.RawMessage `json:"repeat_last_n"`
	NumCtx          json.RawMessage `json:"num_ctx"`
	NumBatch        json.RawMessage `json:"num_batch"`
	NumGPU          json.RawMessage `json:"num_gpu"`
	MainGPU         json.RawMessage `json:"main_gpu"`
	NumThread       json.RawMessage `json:"num_thread"`
	NumKeep         json.RawMessage `json:"num_keep"`
	PenalizeNewline *bool           `json:"penalize_newline"`
	Numa            *bool           `json:"numa"`
	LowVRAM         *bool           `json:"low_vram"`
	F16KV           *bool           `json:"f16_kv"`
	LogitsAll       *bool           `json:"logits_all"`
	VocabOnly       *bool           `json:"vocab_only"`
	UseMMap         *bool           `json:"use_mmap"`
	UseMLock        *bool           `json:"use_mlock"`
	EmbeddingOnly   *bool           `json:"embedding_only"`
}

// DecodeChatRequest decodes and validates a POST /api/chat body. Every error
// is a *fault.Error of class invalid_request naming the field.
func DecodeChatRequest(body []byte) (Decoded, error) {
	var w chatRequest
	if err := wirejson.Unmarshal(body, &w); err != nil {
		return Decoded{}, err
	}
	if w.Model == "" {
		return Decoded{}, fault.ParamErrorf("model", "model is required")
	}
	req := request.Request{Model: w.Model, Chat: true}
	msgs, err := messages(w.Messages)
	if err != nil {
		return Decoded{}, err
	}
	req.Messages = msgs
	if req.Tools, err = tools(w.Tools); err != nil {
		return Decoded{}, err
	}
	return w.common.finish(req, len(msgs) == 0)
}

// DecodeGenerateRequest decodes and validates a POST /api/generate body.
// Without raw, the prompt (and system) are rendered through the model's chat
// template as a user (and system) message; with raw, the prompt is
// tokenized as is. Every error is a *fault.Error of class invalid_request
// naming the field.
func DecodeGenerateRequest(body []byte) (Decoded, error) {
	var w generateRequest
	if err := wirejson.Unmarshal(body, &w); err != nil {
		return Decoded{}, err
	}
	switch {
	case w.Model == "":
		return Decoded{}, fault.ParamErrorf("model", "model is required")
	case w.Template != "":
		return Decoded{}, fault.ParamErrorf("template", "template overrides are not supported: Skulk renders the model's own (Jinja) chat template; send raw: true with a prompt you rendered yourself instead")
	case w.Suffix != "":
		return Decoded{}, fault.ParamErrorf("suffix", "suffix (fill-in-the-middle) is not supported")
	case len(w.Images) > 0:
		return Decoded{}, fault.ParamErrorf("images", "images are not supported; this server accepts text only")
	case len(w.Context) > 0:
		return Decoded{}, fault.ParamErrorf("context", "context (the token state of an earlier answer) is not supported and is never returned; send the conversation to /api/chat instead")
	case w.Raw && w.System != "":
		return Decoded{}, fault.ParamErrorf("system", "system has no effect with raw: true; put it in the prompt")
	}
	req := request.Request{Model: w.Model}
	if w.Raw {
		req.Prompt = w.Prompt
	} else {
		req.Chat = true
		if w.System != "" {
			req.Messages = append(req.Messages, request.Message{Role: request.RoleSystem, Content: w.System})
		}
		req.Messages = append(req.Messages, request.Message{Role: request.RoleUser, Content: w.Prompt})
	}
	return w.common.finish(req, w.Prompt == "")
}

func messages(in []message) ([]request.Message, error) {
	out := make([]request.Message, 0, len(in))
	for i, m := range in {
		p := fmt.Sprintf("messages[%d]", i)
		role := request.Role(m.Role)
		switch role {
		case request.RoleSystem, request.RoleUser, request.RoleAssistant, request.RoleTool:
		default:
			return nil, fault.ParamErrorf(p+".role", "%s.role %s is not one of system, user, assistant, tool", p, fault.Quote(m.Role))
		}
		if len(m.Images) > 0 {
			return nil, fault.ParamErrorf(p+".images", "%s.images: images are not supported; this server accepts text only", p)
		}
		msg := request.Message{Role: role, Content: m.Content, ReasoningContent: m.Thinking, ToolCallID: m.ToolCallID}
		if role == request.RoleTool {
			msg.Name = m.ToolName
		} else if m.ToolName != "" {
			return nil, fault.ParamErrorf(p+".tool_name", "%s.tool_name is only meaningful on a message of role tool", p)
		}
		for j, tc := range m.ToolCalls {
			q := fmt.Sprintf("%s.tool_calls[%d].function", p, j)
			if tc.Function.Name == "" {
				return nil, fault.ParamErrorf(q+".name", "%s.name is required", q)
			}
			args, err := arguments(tc.Function.Arguments, q+".arguments")
			if err != nil {
				return nil, err
			}
			msg.ToolCalls = append(msg.ToolCalls, request.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
		}
		out = append(out, msg)
	}
	return out, nil
}

// arguments returns a tool call's arguments as JSON object text. Ollama
// sends an object; a string holding a JSON object (OpenAI's habit) is
// tolerated, and null means no arguments.
func arguments(raw json.RawMessage, param string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		s, err := wirejson.String(raw, param)
		if err != nil {
			return "", err
		}
		// Inside the string null is no object, unlike the bare value.
		if raw = bytes.TrimSpace([]byte(s)); len(raw) == 0 || raw[0] != '{' {
			return "", fault.ParamErrorf(param, "%s must be a JSON object", param)
		}
	}
	return wirejson.Object(raw, param)
}

func tools(in []tool) ([]request.Tool, error) {
	out := make([]request.Tool, 0, len(in))
	for i, t := range in {
		p := fmt.Sprintf("tools[%d]", i)
		if t.Type != "" && t.Type != "function" {
			return nil, fault.ParamErrorf(p+".type", "%s.type must be \"function\", got %s", p, fault.Quote(t.Type))
		}
		f := t.Function
		if f == nil || f.Name == "" {
			return nil, fault.ParamErrorf(p+".function.name", "%s.function.name is required", p)
		}
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

// finish maps the shared fields, sets the transport options and validates
// the request. load says the request is Ollama's "load the model" idiom.
func (c *common) finish(req request.Request, load bool) (Decoded, error) {
	var err error
	if req.JSONSchema, err = format(c.Format); err != nil {
		return Decoded{}, err
	}
	if req.TemplateKwargs, err = think(c.Think); err != nil {
		return Decoded{}, err
	}
	if req.KeepAlive, err = keepAlive(c.KeepAlive); err != nil {
		return Decoded{}, err
	}
	if req.Sampling, err = c.Options.sampling(); err != nil {
		return Decoded{}, err
	}
	if c.Logprobs != nil {
		req.Sampling.Logprobs = *c.Logprobs
	}
	if c.TopLogprobs != nil {
		n := *c.TopLogprobs
		if n < 0 || n > request.MaxTopLogprobs {
			return Decoded{}, fault.ParamErrorf("top_logprobs", "top_logprobs must be between 0 and %d, got %d", request.MaxTopLogprobs, n)
		}
		if n > 0 && !req.Sampling.Logprobs {
			return Decoded{}, fault.ParamErrorf("top_logprobs", "top_logprobs requires logprobs to be true")
		}
		req.Sampling.TopLogprobs = int(n)
	}
	d := Decoded{Request: req, Stream: c.Stream == nil || *c.Stream, Load: load}
	if load {
		// Nothing is generated; an empty conversation would not validate.
		return d, nil
	}
	if err := d.Request.Validate(); err != nil {
		return Decoded{}, fmt.Errorf("ollama: %w", err)
	}
	return d, nil
}

// anyObject returns the schema that admits any JSON object (request.Request's
// JSONSchema convention).
func anyObject() json.RawMessage { return json.RawMessage(`{}`) }

// format maps "format": absent, null or "" is free text; "json" is any JSON
// object; an object is a JSON Schema.
func format(raw json.RawMessage) (json.RawMessage, error) {
	if wirejson.IsNull(raw) {
		return nil, nil
	}
	raw = bytes.TrimSpace(raw)
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fault.ParamErrorf("format", "format is not a valid JSON string: %v", err)
		}
		switch s {
		case "":
			return nil, nil
		case "json":
			return anyObject(), nil
		}
		return nil, fault.ParamErrorf("format", "format must be \"json\" or a JSON Schema object, got %s", fault.Quote(s))
	case '{':
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, fault.ParamErrorf("format", "format is not a valid JSON object: %v", err)
		}
		return buf.Bytes(), nil
	}
	return nil, fault.ParamErrorf("format", "format must be \"json\" or a JSON Schema object")
}

// think maps "think" to chat template variables: a boolean sets
// enable_thinking; "high", "medium" or "low" turn thinking on and set
// reasoning_effort (the variable templates such as gpt-oss's read).
func think(raw json.RawMessage) (map[string]any, error) {
	if wirejson.IsNull(raw) {
		return nil, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		return map[string]any{"enable_thinking": b}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		switch s {
		case "high", "medium", "low":
			return map[string]any{"enable_thinking": true, "reasoning_effort": s}, nil
		}
	}
	return nil, fault.ParamErrorf("think", "think must be true, false, \"high\", \"medium\" or \"low\"")
}

// keepAlive reads "keep_alive" (a number of seconds or a Go duration
// string such as "5m"): how long a model placed on demand stays loaded
// once idle after the request; 0 unloads it right after, a negative value
// never. nil when absent (the node's SKULK_KEEP_ALIVE). A model placed
// explicitly never unloads, whatever the request says.
func keepAlive(raw json.RawMessage) (*time.Duration, error) {
	if wirejson.IsNull(raw) {
		return nil, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil {
		d := time.Duration(f * float64(time.Second))
		if f < 0 {
			d = -1
		}
		return &d, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			// Ollama reads a bare number in a string as seconds too.
			d := time.Duration(n * float64(time.Second))
			if n < 0 {
				d = -1
			}
			return &d, nil
		}
		if d, err := time.ParseDuration(s); err == nil {
			if d < 0 {
				d = -1
			}
			return &d, nil
		}
		return nil, fault.ParamErrorf("keep_alive", "keep_alive %s is not a duration (e.g. \"5m\", \"1h\", \"0\")", fault.Quote(s))
	}
	return nil, fault.ParamErrorf("keep_alive", "keep_alive must be a number of seconds or a duration string")
}

// integer reads an integer option. JSON numbers with an integral value
// (40.0) are accepted, as Ollama does; fractions are refused.
func integer(raw json.RawMessage, name string) (int64, bool, error) {
	if wirejson.IsNull(raw) {
		return 0, false, nil
	}
	t := strings.TrimSpace(string(raw))
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n, true, nil
	}
	param := "options." + name
	if t[0] == '"' || t[0] == '[' || t[0] == '{' || t == "true" || t == "false" {
		return 0, false, fault.ParamErrorf(param, "%s must be an integer", param)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false, fault.ParamErrorf(param, "%s must be an integer, got %s", param, fault.Clip(t))
	}
	return int64(f), true, nil
}

// sampling maps the options to request.Sampling. A nil receiver (no options)
// gives the defaults.
func (o *options) sampling() (request.Sampling, error) {
	var s request.Sampling
	if o == nil {
		return s, nil
	}
	checks := []struct {
		name     string
		v        *float64
		min, max float64
	}{
		{"temperature", o.Temperature, 0, 2},
		{"top_p", o.TopP, 0, 1},
		{"min_p", o.MinP, 0, 1},
		{"repeat_penalty", o.RepeatPenalty, 0, math.MaxFloat64},
		{"presence_penalty", o.PresencePenalty, -2, 2},
		{"frequency_penalty", o.FrequencyPenalty, -2, 2},
	}
	for _, c := range checks {
		if c.v == nil {
			continue
		}
		if math.IsNaN(*c.v) || *c.v < c.min || *c.v > c.max {
			if c.max == math.MaxFloat64 {
				return s, fault.ParamErrorf("options."+c.name, "options.%s must not be negative", c.name)
			}
			return s, fault.ParamErrorf("options."+c.name, "options.%s must be between %g and %g", c.name, c.min, c.max)
		}
	}
	s.Temperature, s.TopP = o.Temperature, o.TopP
	if o.MinP != nil {
		s.MinP = *o.MinP
	}
	if o.RepeatPenalty != nil {
		s.RepeatPenalty = *o.RepeatPenalty
	}
	if o.PresencePenalty != nil {
		s.PresencePenalty = *o.PresencePenalty
	}
	if o.FrequencyPenalty != nil {
		s.FrequencyPenalty = *o.FrequencyPenalty
	}
	if n, ok, err := integer(o.RepeatLastN, "repeat_last_n"); err != nil {
		return s, err
	} else if ok {
		// Ollama's -1 is "the context window", which holds the whole answer.
		if n < -1 || n > math.MaxInt32 {
			return s, fault.ParamErrorf("options.repeat_last_n", "options.repeat_last_n must be -1 (the whole context), 0 (penalties off) or a positive window, got %d", n)
		}
		w := int(n)
		s.RepeatLastN = &w
	}
	if n, ok, err := integer(o.TopK, "top_k"); err != nil {
		return s, err
	} else if ok {
		if n < 0 || n > maxTopK {
			return s, fault.ParamErrorf("options.top_k", "options.top_k must be between 0 and %d, got %d", maxTopK, n)
		}
		s.TopK = int(n)
	}
	// A negative seed means "unseeded" (Ollama's default is -1).
	if n, ok, err := integer(o.Seed, "seed"); err != nil {
		return s, err
	} else if ok && n >= 0 {
		seed := uint64(n)
		s.Seed = &seed
	}
	// num_predict -1 (no limit) and -2 (fill the context) both mean the
	// server's default cap; so does 0, as in Ollama's runner.
	if n, ok, err := integer(o.NumPredict, "num_predict"); err != nil {
		return s, err
	} else if ok {
		if n < -2 || n > MaxTokensLimit {
			return s, fault.ParamErrorf("options.num_predict", "options.num_predict must be -1, -2 or between 0 and %d, got %d", MaxTokensLimit, n)
		}
		if n > 0 {
			s.MaxTokens = int(n)
		}
	}
	var err error
	if s.Stop, err = wirejson.Stop(o.Stop, "options.stop"); err != nil {
		return s, err
	}
	if slices.Contains(s.Stop, "") {
		return s, fault.ParamErrorf("options.stop", "options.stop sequences must not be empty")
	}
	return s, o.unsupported()
}

// unsupported refuses the sampling methods the engine lacks, unless they
// are set to the value that turns them off, and type-checks the options
// that are ignored.
func (o *options) unsupported() error {
	if o.TypicalP != nil && *o.TypicalP != 1 {
		return fault.ParamErrorf("options.typical_p", "options.typical_p is not supported (only 1, which turns it off)")
	}
	if o.TfsZ != nil && *o.TfsZ != 1 {
		return fault.ParamErrorf("options.tfs_z", "options.tfs_z is not supported (only 1, which turns it off)")
	}
	if n, ok, err := integer(o.Mirostat, "mirostat"); err != nil {
		return err
	} else if ok && n != 0 {
		return fault.ParamErrorf("options.mirostat", "options.mirostat is not supported (only 0, which turns it off)")
	}
	for _, opt := range []struct {
		name string
		raw  json.RawMessage
	}{
		{"num_ctx", o.NumCtx}, {"num_batch", o.NumBatch},
		{"num_gpu", o.NumGPU}, {"main_gpu", o.MainGPU}, {"num_thread", o.NumThread}, {"num_keep", o.NumKeep},
	} {
		if _, _, err := integer(opt.raw, opt.name); err != nil {
			return err
		}
	}
	return nil
}
