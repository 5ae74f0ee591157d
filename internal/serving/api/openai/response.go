package openai

import (
	"strings"

	"github.com/skulk/skulk/internal/serving/api/wirejson"
	"github.com/skulk/skulk/internal/serving/request"
)

// Meta identifies one answer: its id, the model name echoed to the client,
// and its creation time in Unix seconds. The caller reads the clock and
// mints the id.
type Meta struct {
	ID      string
	Model   string
	Created int64
}

// Usage counts the tokens of one answer.
type Usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails breaks the prompt tokens down: CachedTokens of them
// came from the runner's prefix cache (present when any did).
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func usageFrom(u *request.Usage) *Usage {
	if u == nil {
		return &Usage{}
	}
	out := &Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	if u.CachedTokens > 0 {
		out.PromptTokensDetails = &PromptTokensDetails{CachedTokens: u.CachedTokens}
	}
	return out
}

// timingsFrom is the extension field "timings" (llama-server's): the
// runner's prompt and decode counts and times, when it measured them.
func timingsFrom(u *request.Usage) *request.Timings {
	if u == nil {
		return nil
	}
	return u.Timings
}

// Object names.
const (
	ObjectChatCompletion      = "chat.completion"
	ObjectChatCompletionChunk = "chat.completion.chunk"
	ObjectTextCompletion      = "text_completion"
)

// ChatCompletionChunk is one event of a streamed chat completion.
type ChatCompletionChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
	// Timings, on the last chunk, are llama-server's extension field.
	Timings *request.Timings `json:"timings,omitempty"`
}

// ChunkChoice is the one choice of a chunk. FinishReason is null until the
// last content chunk.
type ChunkChoice struct {
	Index        int           `json:"index"`
	Delta        Delta         `json:"delta"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// Delta is what one chunk adds to the message.
type Delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is a tool call in a stream. Skulk's runners parse calls
// whole, so each arrives in one delta with its index, id, name and
// arguments.
type ToolCallDelta struct {
	Index    int          `json:"index"`
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// ToolCall is a tool call in a whole message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments as JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatLogprobs holds per-token log-probabilities of a chat answer.
type ChatLogprobs struct {
	Content []TokenLogprob `json:"content"`
}

// TokenLogprob is one generated token with its alternatives. Bytes are the
// token's UTF-8 bytes as integers, as OpenAI sends them.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one alternative at a position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

func chatLogprobs(in []request.TokenLogprob) []TokenLogprob {
	out := make([]TokenLogprob, 0, len(in))
	for _, t := range in {
		top := make([]TopLogprob, 0, len(t.Top))
		for _, a := range t.Top {
			top = append(top, TopLogprob{Token: a.Token, Logprob: float64(a.Logprob), Bytes: wirejson.ByteInts(a.Bytes, a.Token)})
		}
		out = append(out, TokenLogprob{Token: t.Token, Logprob: float64(t.Logprob), Bytes: wirejson.ByteInts(t.Bytes, t.Token), TopLogprobs: top})
	}
	return out
}

// finishReason maps a Skulk finish reason to OpenAI's; stop, length and
// tool_calls are the same words, and a task cancelled by an operator ends as
// "stop" because OpenAI clients know no other word for it.
func finishReason(r string) string {
	switch r {
	case request.FinishLength, request.FinishToolCalls:
		return r
	}
	return request.FinishStop
}

// ChatStream turns one task's chunks into the chunk objects of a streamed
// chat completion: a role chunk first, then content, reasoning and tool-call
// deltas, a chunk with the finish reason, and, when includeUsage, a last
// chunk with no choices and the usage.
type ChatStream struct {
	meta         Meta
	includeUsage bool
	started      bool
	toolCalls    int
}

// NewChatStream returns a stream encoder for one answer.
func NewChatStream(m Meta, includeUsage bool) *ChatStream {
	return &ChatStream{meta: m, includeUsage: includeUsage}
}

func (s *ChatStream) chunk(d Delta) ChatCompletionChunk {
	return ChatCompletionChunk{
		ID: s.meta.ID, Object: ObjectChatCompletionChunk, Created: s.meta.Created, Model: s.meta.Model,
		Choices: []ChunkChoice{{Delta: d}},
	}
}

// Encode returns the objects to send for c, in order; none for an error
// chunk (send [ErrorFrom] instead) or an empty delta.
func (s *ChatStream) Encode(c request.Chunk) []ChatCompletionChunk {
	if c.Kind == request.ChunkError {
		return nil
	}
	var out []ChatCompletionChunk
	if !s.started {
		s.started = true
		empty := ""
		out = append(out, s.chunk(Delta{Role: string(request.RoleAssistant), Content: &empty}))
	}
	switch c.Kind {
	case request.ChunkDelta:
		if c.EmptyDelta() {
			return out
		}
		d := Delta{ReasoningContent: c.Reasoning}
		if c.Content != "" {
			d.Content = &c.Content
		}
		ch := s.chunk(d)
		if len(c.Logprobs) > 0 {
			ch.Choices[0].Logprobs = &ChatLogprobs{Content: chatLogprobs(c.Logprobs)}
		}
		out = append(out, ch)
	case request.ChunkToolCall:
		if c.ToolCall == nil {
			return out
		}
		tc := c.ToolCall
		out = append(out, s.chunk(Delta{ToolCalls: []ToolCallDelta{{
			Index: s.toolCalls, ID: tc.ID, Type: "function",
			Function: FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		}}}))
		s.toolCalls++
	case request.ChunkDone:
		reason := finishReason(c.FinishReason)
		if s.toolCalls > 0 && reason == request.FinishStop {
			reason = request.FinishToolCalls
		}
		fin := s.chunk(Delta{})
		fin.Choices[0].FinishReason = &reason
		fin.Timings = timingsFrom(c.Usage)
		out = append(out, fin)
		if s.includeUsage {
			out = append(out, ChatCompletionChunk{
				ID: s.meta.ID, Object: ObjectChatCompletionChunk, Created: s.meta.Created, Model: s.meta.Model,
				Choices: []ChunkChoice{}, Usage: usageFrom(c.Usage),
			})
		}
	}
	return out
}

// ChatCompletion is a whole, non-streamed chat answer.
type ChatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *Usage       `json:"usage"`
	// Timings are llama-server's extension field: prompt and decode
	// counts and times.
	Timings *request.Timings `json:"timings,omitempty"`
}

// ChatChoice is the one choice of a chat answer.
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      Message       `json:"message"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

// Message is the assistant's message. Content is null when the model only
// called tools.
type Message struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ChatAccumulator aggregates one task's chunks into a [ChatCompletion].
type ChatAccumulator struct {
	meta               Meta
	content, reasoning strings.Builder
	toolCalls          []ToolCall
	logprobs           []TokenLogprob
	finish             string
	usage              *request.Usage
}

// NewChatAccumulator returns an accumulator for one answer.
func NewChatAccumulator(m Meta) *ChatAccumulator { return &ChatAccumulator{meta: m} }

// Add folds c into the answer. Error chunks are the caller's to handle.
func (a *ChatAccumulator) Add(c request.Chunk) {
	switch c.Kind {
	case request.ChunkDelta:
		a.content.WriteString(c.Content)
		a.reasoning.WriteString(c.Reasoning)
		a.logprobs = append(a.logprobs, chatLogprobs(c.Logprobs)...)
	case request.ChunkToolCall:
		if tc := c.ToolCall; tc != nil {
			a.toolCalls = append(a.toolCalls, ToolCall{ID: tc.ID, Type: "function", Function: FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
	case request.ChunkDone:
		a.finish, a.usage = c.FinishReason, c.Usage
	}
}

// Result returns the answer aggregated so far.
func (a *ChatAccumulator) Result() ChatCompletion {
	msg := Message{Role: string(request.RoleAssistant), ReasoningContent: a.reasoning.String(), ToolCalls: a.toolCalls}
	if content := a.content.String(); content != "" || len(a.toolCalls) == 0 {
		msg.Content = &content
	}
	reason := finishReason(a.finish)
	if len(a.toolCalls) > 0 && reason == request.FinishStop {
		reason = request.FinishToolCalls
	}
	choice := ChatChoice{Message: msg, FinishReason: reason}
	if len(a.logprobs) > 0 {
		choice.Logprobs = &ChatLogprobs{Content: a.logprobs}
	}
	return ChatCompletion{
		ID: a.meta.ID, Object: ObjectChatCompletion, Created: a.meta.Created, Model: a.meta.Model,
		Choices: []ChatChoice{choice}, Usage: usageFrom(a.usage), Timings: timingsFrom(a.usage),
	}
}

// TextCompletion is a whole completion or, streamed, one event of it.
type TextCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []TextChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
	// Timings are llama-server's extension field (on the last event of a
	// stream).
	Timings *request.Timings `json:"timings,omitempty"`
}

// TextChoice is the one choice of a completion. FinishReason is null in
// stream events before the last.
type TextChoice struct {
	Text         string              `json:"text"`
	Index        int                 `json:"index"`
	Logprobs     *CompletionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

// CompletionLogprobs is the legacy completions logprobs shape: parallel
// arrays, one entry per token.
type CompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// appendCompletionLogprobs appends in to lp; offset is the text length
// before the first token, and the new length is returned.
func appendCompletionLogprobs(lp *CompletionLogprobs, in []request.TokenLogprob, offset int) int {
	for _, t := range in {
		top := make(map[string]float64, len(t.Top))
		for _, a := range t.Top {
			top[a.Token] = float64(a.Logprob)
		}
		lp.Tokens = append(lp.Tokens, t.Token)
		lp.TokenLogprobs = append(lp.TokenLogprobs, float64(t.Logprob))
		lp.TopLogprobs = append(lp.TopLogprobs, top)
		lp.TextOffset = append(lp.TextOffset, offset)
		offset += len(t.Token)
	}
	return offset
}

// CompletionStream turns one task's chunks into the events of a streamed
// completion. Reasoning and tool calls have no place in this format and are
// dropped.
type CompletionStream struct {
	meta         Meta
	includeUsage bool
	offset       int
}

// NewCompletionStream returns a stream encoder for one completion.
func NewCompletionStream(m Meta, includeUsage bool) *CompletionStream {
	return &CompletionStream{meta: m, includeUsage: includeUsage}
}

func (s *CompletionStream) event(c TextChoice) TextCompletion {
	return TextCompletion{ID: s.meta.ID, Object: ObjectTextCompletion, Created: s.meta.Created, Model: s.meta.Model, Choices: []TextChoice{c}}
}

// Encode returns the events to send for c, in order.
func (s *CompletionStream) Encode(c request.Chunk) []TextCompletion {
	switch c.Kind {
	case request.ChunkDelta:
		if c.Content == "" && len(c.Logprobs) == 0 {
			return nil
		}
		choice := TextChoice{Text: c.Content}
		if len(c.Logprobs) > 0 {
			choice.Logprobs = &CompletionLogprobs{}
			appendCompletionLogprobs(choice.Logprobs, c.Logprobs, s.offset)
		}
		s.offset += len(c.Content)
		return []TextCompletion{s.event(choice)}
	case request.ChunkDone:
		reason := finishReason(c.FinishReason)
		fin := s.event(TextChoice{FinishReason: &reason})
		fin.Timings = timingsFrom(c.Usage)
		out := []TextCompletion{fin}
		if s.includeUsage {
			out = append(out, TextCompletion{
				ID: s.meta.ID, Object: ObjectTextCompletion, Created: s.meta.Created, Model: s.meta.Model,
				Choices: []TextChoice{}, Usage: usageFrom(c.Usage),
			})
		}
		return out
	}
	return nil
}

// CompletionAccumulator aggregates one task's chunks into a [TextCompletion].
type CompletionAccumulator struct {
	meta     Meta
	text     strings.Builder
	logprobs *CompletionLogprobs
	finish   string
	usage    *request.Usage
}

// NewCompletionAccumulator returns an accumulator for one completion.
func NewCompletionAccumulator(m Meta) *CompletionAccumulator {
	return &CompletionAccumulator{meta: m}
}

// Add folds c into the completion. Error chunks are the caller's to handle.
func (a *CompletionAccumulator) Add(c request.Chunk) {
	switch c.Kind {
	case request.ChunkDelta:
		if len(c.Logprobs) > 0 {
			if a.logprobs == nil {
				a.logprobs = &CompletionLogprobs{}
			}
			appendCompletionLogprobs(a.logprobs, c.Logprobs, a.text.Len())
		}
		a.text.WriteString(c.Content)
	case request.ChunkDone:
		a.finish, a.usage = c.FinishReason, c.Usage
	}
}

// Result returns the completion aggregated so far.
func (a *CompletionAccumulator) Result() TextCompletion {
	reason := finishReason(a.finish)
	return TextCompletion{
		ID: a.meta.ID, Object: ObjectTextCompletion, Created: a.meta.Created, Model: a.meta.Model,
		Choices: []TextChoice{{Text: a.text.String(), Logprobs: a.logprobs, FinishReason: &reason}},
		Usage:   usageFrom(a.usage),
		Timings: timingsFrom(a.usage),
	}
}

// Model is one entry of GET /v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is the GET /v1/models document.
type ModelList struct {
	Object string  `json:"object"` // "list"
	Data   []Model `json:"data"`
}

// NewModelList returns the list document for models.
func NewModelList(models []Model) ModelList {
	data := make([]Model, len(models))
	for i, m := range models {
		m.Object = "model"
		data[i] = m
	}
	return ModelList{Object: "list", Data: data}
}
