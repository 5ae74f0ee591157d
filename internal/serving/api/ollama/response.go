package ollama

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/serving/api/wirejson"
	"github.com/skulk/skulk/internal/serving/request"
)

// Done reasons.
const (
	DoneStop   = "stop"
	DoneLength = "length"
	DoneLoad   = "load"
	DoneUnload = "unload"
)

// doneReason maps a Skulk finish reason to Ollama's words: length stays,
// and everything else (stop, tool calls, an operator's cancel) is "stop",
// the only other word Ollama uses for a finished generation.
func doneReason(r string) string {
	if r == request.FinishLength {
		return DoneLength
	}
	return DoneStop
}

// Metrics are the counters and durations (in nanoseconds) of a finished
// answer, as the API node measured them: TotalDuration from the request's
// arrival to the last chunk, PromptEvalDuration to the first chunk (queueing
// and prompt processing), EvalDuration from the first chunk to the last.
// LoadDuration is always 0: instances are placed and loaded ahead of
// requests, never by one.
type Metrics struct {
	TotalDuration      int64 `json:"total_duration"`
	LoadDuration       int64 `json:"load_duration"`
	PromptEvalCount    int   `json:"prompt_eval_count"`
	PromptEvalDuration int64 `json:"prompt_eval_duration"`
	EvalCount          int   `json:"eval_count"`
	EvalDuration       int64 `json:"eval_duration"`
}

// clock records when an answer started, produced its first chunk and ended.
type clock struct {
	start, first time.Time
}

// saw records the arrival of ch at at. An empty delta (the prompt count a
// runner sends before prompt processing) is not the answer's first output.
func (c *clock) saw(ch request.Chunk, at time.Time) {
	if ch.EmptyDelta() {
		return
	}
	c.mark(at)
}

func (c *clock) mark(at time.Time) {
	if c.first.IsZero() {
		c.first = at
	}
}

func (c *clock) metrics(end time.Time, u *request.Usage) *Metrics {
	c.mark(end)
	m := &Metrics{
		TotalDuration:      max(0, end.Sub(c.start).Nanoseconds()),
		PromptEvalDuration: max(0, c.first.Sub(c.start).Nanoseconds()),
		EvalDuration:       max(0, end.Sub(c.first).Nanoseconds()),
	}
	if u != nil {
		// As Ollama counts it: the prompt tokens evaluated, not those its
		// cache held.
		m.PromptEvalCount, m.EvalCount = u.PromptTokens-u.CachedTokens, u.CompletionTokens
	}
	return m
}

// Message is a chat message in an answer. Content is always present, empty
// when the line carries only thinking or tool calls.
type Message struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	Thinking  string     `json:"thinking,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is a call the model made. Arguments is the JSON object the model
// produced; if a model ever produced arguments that are not a JSON object,
// they are sent as a JSON string rather than dropped.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments.
type FunctionCall struct {
	Index     int             `json:"index"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func toolCallFrom(tc *request.ToolCall, index int) ToolCall {
	args := bytes.TrimSpace([]byte(tc.Arguments))
	if len(args) == 0 {
		args = []byte("{}")
	} else if args[0] != '{' || !json.Valid(args) {
		args, _ = json.Marshal(tc.Arguments) // a string always marshals
	}
	return ToolCall{ID: tc.ID, Function: FunctionCall{Index: index, Name: tc.Name, Arguments: args}}
}

// Logprob is one generated token with its best alternatives.
type Logprob struct {
	Token       string         `json:"token"`
	Logprob     float64        `json:"logprob"`
	Bytes       []int          `json:"bytes,omitempty"`
	TopLogprobs []TokenLogprob `json:"top_logprobs,omitempty"`
}

// TokenLogprob is one alternative at a position.
type TokenLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes,omitempty"`
}

func logprobs(in []request.TokenLogprob) []Logprob {
	if len(in) == 0 {
		return nil
	}
	out := make([]Logprob, 0, len(in))
	for _, t := range in {
		lp := Logprob{Token: t.Token, Logprob: float64(t.Logprob), Bytes: wirejson.ByteInts(t.Bytes, t.Token)}
		for _, a := range t.Top {
			lp.TopLogprobs = append(lp.TopLogprobs, TokenLogprob{Token: a.Token, Logprob: float64(a.Logprob), Bytes: wirejson.ByteInts(a.Bytes, a.Token)})
		}
		out = append(out, lp)
	}
	return out
}

// ChatResponse is one line of a streamed chat answer or, with Done, the
// whole non-streamed answer. The last line (Done) carries DoneReason and the
// Metrics.
type ChatResponse struct {
	Model      string    `json:"model"`
	CreatedAt  time.Time `json:"created_at"`
	Message    Message   `json:"message"`
	Done       bool      `json:"done"`
	DoneReason string    `json:"done_reason,omitempty"`
	*Metrics
	Logprobs []Logprob `json:"logprobs,omitempty"`
}

// GenerateResponse is one line of a streamed generate answer or, with Done,
// the whole non-streamed answer. Ollama's context field (the answer's token
// state) is never sent.
type GenerateResponse struct {
	Model      string     `json:"model"`
	CreatedAt  time.Time  `json:"created_at"`
	Response   string     `json:"response"`
	Thinking   string     `json:"thinking,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	Done       bool       `json:"done"`
	DoneReason string     `json:"done_reason,omitempty"`
	*Metrics
	Logprobs []Logprob `json:"logprobs,omitempty"`
}

// ChatStream turns one task's chunks into the lines of a streamed chat
// answer: one line per delta or tool call, then a last line with done,
// done_reason and the metrics.
type ChatStream struct {
	model     string
	clock     clock
	toolCalls int
}

// NewChatStream returns the stream encoder of one answer for model; start
// is when the request arrived.
func NewChatStream(model string, start time.Time) *ChatStream {
	return &ChatStream{model: model, clock: clock{start: start}}
}

func (s *ChatStream) line(at time.Time, m Message) ChatResponse {
	m.Role = string(request.RoleAssistant)
	return ChatResponse{Model: s.model, CreatedAt: at.UTC(), Message: m}
}

// Encode returns the lines to send for c, which arrived at at; none for an
// error chunk (send [ErrorFrom] instead) or an empty delta.
func (s *ChatStream) Encode(c request.Chunk, at time.Time) []ChatResponse {
	if c.Kind == request.ChunkError {
		return nil
	}
	s.clock.saw(c, at)
	switch c.Kind {
	case request.ChunkDelta:
		if c.EmptyDelta() {
			return nil
		}
		l := s.line(at, Message{Content: c.Content, Thinking: c.Reasoning})
		l.Logprobs = logprobs(c.Logprobs)
		return []ChatResponse{l}
	case request.ChunkToolCall:
		if c.ToolCall == nil {
			return nil
		}
		l := s.line(at, Message{ToolCalls: []ToolCall{toolCallFrom(c.ToolCall, s.toolCalls)}})
		s.toolCalls++
		return []ChatResponse{l}
	case request.ChunkDone:
		l := s.line(at, Message{})
		l.Done, l.DoneReason, l.Metrics = true, doneReason(c.FinishReason), s.clock.metrics(at, c.Usage)
		return []ChatResponse{l}
	}
	return nil
}

// ChatAccumulator aggregates one task's chunks into one [ChatResponse].
type ChatAccumulator struct {
	model              string
	clock              clock
	content, reasoning strings.Builder
	toolCalls          []ToolCall
	logprobs           []Logprob
	done               ChatResponse
}

// NewChatAccumulator returns the accumulator of one answer for model; start
// is when the request arrived.
func NewChatAccumulator(model string, start time.Time) *ChatAccumulator {
	return &ChatAccumulator{model: model, clock: clock{start: start}}
}

// Add folds c, which arrived at at, into the answer. Error chunks are the
// caller's to handle.
func (a *ChatAccumulator) Add(c request.Chunk, at time.Time) {
	if c.Kind == request.ChunkError {
		return
	}
	a.clock.saw(c, at)
	switch c.Kind {
	case request.ChunkDelta:
		a.content.WriteString(c.Content)
		a.reasoning.WriteString(c.Reasoning)
		a.logprobs = append(a.logprobs, logprobs(c.Logprobs)...)
	case request.ChunkToolCall:
		if c.ToolCall != nil {
			a.toolCalls = append(a.toolCalls, toolCallFrom(c.ToolCall, len(a.toolCalls)))
		}
	case request.ChunkDone:
		a.done = ChatResponse{Model: a.model, CreatedAt: at.UTC(), Done: true,
			DoneReason: doneReason(c.FinishReason), Metrics: a.clock.metrics(at, c.Usage)}
	}
}

// Result returns the answer; call it after adding the done chunk.
func (a *ChatAccumulator) Result() ChatResponse {
	r := a.done
	r.Model = a.model
	r.Message = Message{Role: string(request.RoleAssistant), Content: a.content.String(),
		Thinking: a.reasoning.String(), ToolCalls: a.toolCalls}
	r.Logprobs = a.logprobs
	return r
}

// GenerateStream turns one task's chunks into the lines of a streamed
// generate answer.
type GenerateStream struct {
	model     string
	clock     clock
	toolCalls int
}

// NewGenerateStream returns the stream encoder of one answer for model;
// start is when the request arrived.
func NewGenerateStream(model string, start time.Time) *GenerateStream {
	return &GenerateStream{model: model, clock: clock{start: start}}
}

// Encode returns the lines to send for c, which arrived at at; none for an
// error chunk (send [ErrorFrom] instead) or an empty delta.
func (s *GenerateStream) Encode(c request.Chunk, at time.Time) []GenerateResponse {
	if c.Kind == request.ChunkError {
		return nil
	}
	s.clock.saw(c, at)
	l := GenerateResponse{Model: s.model, CreatedAt: at.UTC()}
	switch c.Kind {
	case request.ChunkDelta:
		if c.EmptyDelta() {
			return nil
		}
		l.Response, l.Thinking, l.Logprobs = c.Content, c.Reasoning, logprobs(c.Logprobs)
	case request.ChunkToolCall:
		if c.ToolCall == nil {
			return nil
		}
		l.ToolCalls = []ToolCall{toolCallFrom(c.ToolCall, s.toolCalls)}
		s.toolCalls++
	case request.ChunkDone:
		l.Done, l.DoneReason, l.Metrics = true, doneReason(c.FinishReason), s.clock.metrics(at, c.Usage)
	default:
		return nil
	}
	return []GenerateResponse{l}
}

// GenerateAccumulator aggregates one task's chunks into one
// [GenerateResponse].
type GenerateAccumulator struct {
	model              string
	clock              clock
	content, reasoning strings.Builder
	toolCalls          []ToolCall
	logprobs           []Logprob
	done               GenerateResponse
}

// NewGenerateAccumulator returns the accumulator of one answer for model;
// start is when the request arrived.
func NewGenerateAccumulator(model string, start time.Time) *GenerateAccumulator {
	return &GenerateAccumulator{model: model, clock: clock{start: start}}
}

// Add folds c, which arrived at at, into the answer. Error chunks are the
// caller's to handle.
func (a *GenerateAccumulator) Add(c request.Chunk, at time.Time) {
	if c.Kind == request.ChunkError {
		return
	}
	a.clock.saw(c, at)
	switch c.Kind {
	case request.ChunkDelta:
		a.content.WriteString(c.Content)
		a.reasoning.WriteString(c.Reasoning)
		a.logprobs = append(a.logprobs, logprobs(c.Logprobs)...)
	case request.ChunkToolCall:
		if c.ToolCall != nil {
			a.toolCalls = append(a.toolCalls, toolCallFrom(c.ToolCall, len(a.toolCalls)))
		}
	case request.ChunkDone:
		a.done = GenerateResponse{Model: a.model, CreatedAt: at.UTC(), Done: true,
			DoneReason: doneReason(c.FinishReason), Metrics: a.clock.metrics(at, c.Usage)}
	}
}

// Result returns the answer; call it after adding the done chunk.
func (a *GenerateAccumulator) Result() GenerateResponse {
	r := a.done
	r.Model = a.model
	r.Response, r.Thinking, r.ToolCalls, r.Logprobs = a.content.String(), a.reasoning.String(), a.toolCalls, a.logprobs
	return r
}

// ChatLoaded is the answer to a chat request with no messages (Ollama's
// "load" idiom, or "unload" with keep_alive 0): reason is DoneLoad once
// the model has a ready instance, DoneUnload once its instances placed on
// demand are stopped.
func ChatLoaded(model, reason string, at time.Time) ChatResponse {
	return ChatResponse{Model: model, CreatedAt: at.UTC(), Message: Message{Role: string(request.RoleAssistant)},
		Done: true, DoneReason: reason}
}

// GenerateLoaded is the answer to a generate request with an empty prompt,
// as ChatLoaded.
func GenerateLoaded(model, reason string, at time.Time) GenerateResponse {
	return GenerateResponse{Model: model, CreatedAt: at.UTC(), Done: true, DoneReason: reason}
}
