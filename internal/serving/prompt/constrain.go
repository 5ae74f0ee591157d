package prompt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/skulk/skulk/internal/engine/grammar"
	"github.com/skulk/skulk/internal/engine/output"
	"github.com/skulk/skulk/internal/engine/tokenizer"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

// Structured output: a JSON schema (response_format json_object and
// json_schema) and a forced tool call (tool_choice "required" or a named
// function) both generate under a grammar.Constraint, which masks every
// token that would leave the grammar before each sampling step.
//
//   - JSONSchema `{}` (json_object) is any JSON object; any other schema is
//     compiled by grammar.Compile, and a schema it refuses is an
//     invalid_request error on "json_schema" that names the problem.
//   - The answer is the JSON value and nothing else: it is streamed as
//     content, not parsed for reasoning or tool calls, and stop sequences do
//     not apply (the grammar decides where the answer ends). Once the value
//     is complete only end-of-generation tokens are allowed, so the task
//     ends with finish_reason "stop" and the content parses and matches the
//     schema. If max_tokens or the context window runs out first the
//     finish_reason is "length" and the content may be incomplete JSON, as
//     with OpenAI. A value completed by the last token allowed is "stop".
//   - A forced tool call is the value {"name": N, "arguments": A} (Llama 3:
//     "parameters"), with N one of the offered tools (only the named one for
//     a named function) and A matching that tool's parameters schema (no
//     parameters: the empty object), or any object where that schema uses
//     a feature the grammar refuses. A schema whose strings or numbers are
//     unbounded lets a model that never closes them run to max_tokens.
//     The prompt ends with the dialect's call opener (<tool_call>\n for
//     Hermes and Qwen, [TOOL_CALLS] for Mistral, nothing for Llama 3 and
//     templates without a dialect), so the model writes the call where it
//     was trained to. The value is not streamed as text: when it is
//     complete it becomes one tool_call chunk and the finish_reason is
//     "tool_calls"; if the budget runs out first nothing is emitted and the
//     finish_reason is "length". Logprobs are not reported for a forced
//     call (OpenAI reports none for tool calls either).
//   - A template that opened a <think> block gets "</think>\n\n" before
//     the value, so the value is the answer, not the reasoning. Harmony
//     (gpt-oss) gets <|channel|>final<|message|> (commentary for a call).
//   - tool_choice "none" offers no tools to the template and parses no
//     calls.

// structured is a request's structured-output mode, built by Prepare.
type structured struct {
	matcher *grammar.Matcher
	// source is the schema matcher was compiled from by compileSchema: a
	// pipeline's last rank, which samples, compiles it again.
	source  []byte
	prefix  string // text that ends the prompt, before the value
	call    bool   // the value is a forced tool call
	argsKey string // the call's arguments key
}

// checkToolChoice validates tool_choice against the tools offered.
func checkToolChoice(req request.Request) error {
	tc := req.ToolChoice
	switch tc.Mode {
	case "", "auto", "none":
		return nil
	case "required", "function":
	default:
		return fault.ParamErrorf("tool_choice", "tool_choice %s is not one of auto, none, required, function", fault.Quote(tc.Mode))
	}
	if !req.Chat {
		return fault.ParamErrorf("tool_choice", "tool_choice %s needs a chat request", fault.Quote(tc.Mode))
	}
	if len(req.Tools) == 0 {
		return fault.ParamErrorf("tool_choice", "tool_choice %s needs at least one tool", fault.Quote(tc.Mode))
	}
	if tc.Mode == "function" && !slices.ContainsFunc(req.Tools, func(t request.Tool) bool { return t.Name == tc.Name }) {
		return fault.ParamErrorf("tool_choice", "tool_choice names the function %s, which is not among the tools", fault.Quote(tc.Name))
	}
	return nil
}

// structure works out req's structured-output mode from the parser
// configuration of its rendered prompt; nil means free text.
func structure(req request.Request, cfg output.Config) (*structured, error) {
	var s *structured
	switch {
	case req.ToolChoice.Mode == "required" || req.ToolChoice.Mode == "function":
		var err error
		if s, err = forcedCall(req.Tools, req.ToolChoice, cfg.Dialect); err != nil {
			return nil, err
		}
	case len(req.JSONSchema) > 0:
		m, err := compileSchema(req.JSONSchema)
		if err != nil {
			return nil, err
		}
		s = &structured{matcher: m, source: req.JSONSchema}
	default:
		return nil, nil
	}
	if cfg.StartInReasoning {
		s.prefix = "</think>\n\n" + s.prefix
	}
	if cfg.Dialect == output.Harmony {
		// The prompt ends <|start|>assistant: open the message the value is.
		channel := "final"
		if s.call {
			channel = "commentary"
		}
		s.prefix = "<|channel|>" + channel + "<|message|>" + s.prefix
	}
	return s, nil
}

// compileSchema compiles a request's JSON schema; {} is any JSON object.
func compileSchema(schema json.RawMessage) (*grammar.Matcher, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(schema, &obj); err == nil && len(obj) == 0 {
		return grammar.JSONObject(), nil
	}
	m, err := grammar.Compile(schema)
	if err != nil {
		return nil, fault.ParamErrorf("json_schema", "the JSON schema is refused: %v", err)
	}
	return m, nil
}

// forcedCall builds the grammar of a call to one of tools (only
// choice.Name for a named function) in dialect d.
func forcedCall(tools []request.Tool, choice request.ToolChoice, d output.Dialect) (*structured, error) {
	s := &structured{call: true, argsKey: "arguments"}
	switch d {
	case output.Hermes, output.QwenXML:
		s.prefix = "<tool_call>\n"
	case output.Mistral:
		s.prefix = "[TOOL_CALLS]"
	case output.Llama3:
		s.argsKey = "parameters"
	}
	var alts []string
	var names []string
	for i, t := range tools {
		if choice.Mode == "function" && t.Name != choice.Name {
			continue
		}
		args, err := argumentsSchema(t.Parameters, fmt.Sprintf("#/anyOf/%d/properties/%s", len(alts), s.argsKey))
		if err != nil {
			return nil, fault.ParamErrorf("tools", "tools[%d] (%s): the parameters schema is refused: %v", i, t.Name, err)
		}
		name, _ := json.Marshal(t.Name)
		alts = append(alts, fmt.Sprintf(`{"type":"object","properties":{"name":{"const":%s},%q:%s},"required":["name",%q],"additionalProperties":false}`,
			name, s.argsKey, args, s.argsKey))
		names = append(names, string(name))
	}
	s.source = []byte(`{"anyOf":[` + strings.Join(alts, ",") + `]}`)
	m, err := grammar.Compile(s.source)
	if err != nil {
		// The tools' schemas compile alone but not together (over a compile
		// limit): fall back to any arguments object.
		s.source = fmt.Appendf(nil, `{"type":"object","properties":{"name":{"enum":[%s]},%q:{"type":"object"}},"required":["name",%q],"additionalProperties":false}`,
			strings.Join(names, ","), s.argsKey, s.argsKey)
		m, err = grammar.Compile(s.source)
		if err != nil {
			return nil, fault.ParamErrorf("tools", "the tool-call grammar is refused: %v", err)
		}
	}
	s.matcher = m
	return s, nil
}

// argumentsSchema returns the schema a forced call's arguments follow, to
// be placed at the JSON pointer at: the tool's parameters when the grammar
// supports them on their own (their local $refs rebased onto at), any
// object otherwise. No parameters means none: the empty object, as OpenAI
// reads an omitted parameters. A schema that is not a schema at all is an
// error.
func argumentsSchema(params json.RawMessage, at string) (string, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		return `{"type":"object","properties":{},"additionalProperties":false}`, nil
	}
	if _, err := grammar.Compile(params); err != nil {
		if errors.Is(err, grammar.ErrInvalidSchema) || errors.Is(err, grammar.ErrUnsatisfiable) {
			return "", err
		}
		return `{"type":"object"}`, nil
	}
	d := json.NewDecoder(bytes.NewReader(params))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return "", err // Compile accepted it, so this does not happen
	}
	b, err := json.Marshal(rebaseRefs(doc, at))
	return string(b), err
}

// rebaseRefs rewrites every local "$ref" ("#...") of schema to start at the
// pointer at instead of the document root. enum and const values are data,
// not schemas, and are left alone; the maps of named subschemas are walked
// whatever their names.
func rebaseRefs(schema any, at string) any {
	switch v := schema.(type) {
	case map[string]any:
		for k, x := range v {
			switch k {
			case "enum", "const":
			case "$ref":
				if ref, ok := x.(string); ok && strings.HasPrefix(ref, "#") {
					v[k] = at + ref[1:]
				}
			case "properties", "$defs", "definitions", "patternProperties", "dependentSchemas":
				if named, ok := x.(map[string]any); ok {
					for name, sub := range named {
						named[name] = rebaseRefs(sub, at)
					}
				}
			default:
				v[k] = rebaseRefs(x, at)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = rebaseRefs(x, at)
		}
	}
	return schema
}

// constrained is one task's constrained generation.
type constrained struct {
	s    *structured
	con  *grammar.Constraint
	emit func(request.Chunk) // downstream
	text strings.Builder     // a forced call's text, held back
}

// start builds the task's constraint, which the sequencer applies
// before each draw and advances by each token. It returns the task's
// constrained state (nil for free text) and the emit function the streamer
// must use.
func (s *structured) start(md *Model, emit func(request.Chunk)) (*constrained, func(request.Chunk), error) {
	if s == nil {
		return nil, emit, nil
	}
	v, err := grammarVocab(md)
	if err != nil {
		return nil, nil, err
	}
	c := &constrained{s: s, con: grammar.NewConstraintVocab(s.matcher, v), emit: emit}
	if s.call {
		return c, c.hold, nil
	}
	return c, emit, nil
}

// sampling returns the streamer's settings: no stop sequences under a
// grammar.
func (s *structured) sampling(in request.Sampling) request.Sampling {
	if s != nil {
		in.Stop = nil
	}
	return in
}

// hold keeps a forced call's text from the client.
func (c *constrained) hold(ch request.Chunk) { c.text.WriteString(ch.Content) }

// finish returns the task's finish reason, given the loop's: a value the
// last allowed token completed is "stop", and a complete forced call is
// emitted as a tool call with "tool_calls".
func (c *constrained) finish(reason string) (string, error) {
	if c == nil {
		return reason, nil
	}
	if reason == request.FinishLength && c.con.Done() {
		reason = request.FinishStop
	}
	if !c.s.call || reason != request.FinishStop {
		return reason, nil
	}
	var call map[string]json.RawMessage
	if err := json.Unmarshal([]byte(c.text.String()), &call); err != nil {
		return "", fmt.Errorf("runner: a forced tool call is not JSON: %w (%s)", err, fault.Quote(c.text.String()))
	}
	var name string
	if err := json.Unmarshal(call["name"], &name); err != nil {
		return "", fmt.Errorf("runner: a forced tool call has no name: %w (%s)", err, fault.Quote(c.text.String()))
	}
	var args bytes.Buffer
	if err := json.Compact(&args, call[c.s.argsKey]); err != nil {
		return "", fmt.Errorf("runner: a forced tool call's arguments are not JSON: %w (%s)", err, fault.Quote(c.text.String()))
	}
	c.emit(request.Chunk{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: "call_0", Name: name, Arguments: args.String()}})
	return request.FinishToolCalls, nil
}

// grammarVocab returns the model's vocabulary Prepared for masking, built
// on first use: each token's piece as the streamer decodes it
// (tok.Piece(id, false): SentencePiece spaces restored, byte tokens as
// their byte, control and unknown tokens empty, so never allowed), with the
// tokenizer's end-of-generation tokens.
func grammarVocab(md *Model) (*grammar.Vocab, error) {
	lv := &md.vocab
	lv.once.Do(func() { lv.v, lv.err = buildVocab(md.M.Tok) })
	return lv.v, lv.err
}

func buildVocab(tok *tokenizer.Tokenizer) (*grammar.Vocab, error) {
	pieces := make([]string, tok.VocabSize())
	for id := range pieces {
		pieces[id] = tok.Piece(int32(id), false)
	}
	v, err := grammar.NewVocab(pieces, tok.EOG())
	if err != nil {
		return nil, fmt.Errorf("runner: the vocabulary cannot be constrained: %w", err)
	}
	return v, nil
}

// lazyVocab is a loaded model's grammar vocabulary, built once.
type lazyVocab struct {
	once sync.Once
	v    *grammar.Vocab
	err  error
}
