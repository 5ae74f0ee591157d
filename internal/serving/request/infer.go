// Package request is the vocabulary every part of a request's path shares: the
// normalized request that each wire format (OpenAI Chat Completions and
// Completions, OpenAI Responses, Anthropic, Ollama) translates into, the
// chunks a runner streams back, the embedding request and result, the
// models a request may name, and the error classes that each format maps to
// its own status codes and shapes. It depends on the standard library only.
package request

import (
	"encoding/json"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
)

// Role of a chat message.
type Role string

// Roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one chat message.
type Message struct {
	Role             Role       `json:"role"`
	Content          string     `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"` // for RoleTool
	Name             string     `json:"name,omitempty"`
}

// ToolCall is a call the model made.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON object as text
}

// Tool is a function the client offers the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // JSON Schema
}

// ToolChoice says whether and which tool the model must call.
type ToolChoice struct {
	Mode string `json:"mode,omitempty"` // "", "auto", "none", "required", "function"
	Name string `json:"name,omitempty"` // with Mode "function"
}

// Sampling holds the sampling and stopping settings of a request. Pointers
// distinguish "not given" (use the default) from zero.
type Sampling struct {
	MaxTokens        int      `json:"max_tokens,omitempty"` // 0 = DefaultMaxTokens
	Temperature      *float64 `json:"temperature,omitempty"`
	TopP             *float64 `json:"top_p,omitempty"`
	TopK             int      `json:"top_k,omitempty"`
	MinP             float64  `json:"min_p,omitempty"`
	RepeatPenalty    float64  `json:"repeat_penalty,omitempty"`
	PresencePenalty  float64  `json:"presence_penalty,omitempty"`
	FrequencyPenalty float64  `json:"frequency_penalty,omitempty"`
	// RepeatLastN is the penalties' window in tokens of the answer: nil
	// means DefaultRepeatLastN, 0 turns the penalties off, -1 takes the
	// whole answer so far (Ollama's repeat_last_n).
	RepeatLastN *int     `json:"repeat_last_n,omitempty"`
	Seed        *uint64  `json:"seed,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	Logprobs    bool     `json:"logprobs,omitempty"`
	TopLogprobs int      `json:"top_logprobs,omitempty"`
}

// DefaultRepeatLastN is the penalties' window when a request names none
// (llama.cpp's and Ollama's default).
const DefaultRepeatLastN = 64

// DefaultMaxTokens caps generation when a request names no limit.
const DefaultMaxTokens = 4096

// ChatReplyTokens is the reply cap the chat clients (skulk chat, the
// dashboard's chat) send unless their user sets another, so that one reply
// cannot fill the whole context window and every turn leaves room for the
// next.
const ChatReplyTokens = 512

// Sampling defaults for fields a request leaves unset, as llama-server sets
// them: a request with no temperature samples at 0.8 with top_p 0.95; send
// temperature 0 for greedy decoding. top_k, min_p and the penalties are
// plain numbers in Sampling, so their zero value is "off".
const (
	DefaultTemperature = 0.8
	DefaultTopP        = 0.95
)

// TokenCap is the request's generation cap: its own, else DefaultMaxTokens.
func (s Sampling) TokenCap() int {
	if s.MaxTokens == 0 {
		return DefaultMaxTokens
	}
	return s.MaxTokens
}

// MaxStopSequences and MaxTopLogprobs bound what a request may ask for.
const (
	MaxStopSequences = 16
	MaxTopLogprobs   = 20
)

// Request is one normalized generation request.
type Request struct {
	Model string `json:"model"`
	// Chat requests carry Messages, rendered through the model's template;
	// raw completions carry Prompt, tokenized as is.
	Messages []Message `json:"messages,omitempty"`
	Prompt   string    `json:"prompt,omitempty"`
	Chat     bool      `json:"chat"`

	Tools      []Tool     `json:"tools,omitempty"`
	ToolChoice ToolChoice `json:"tool_choice,omitempty"`
	Sampling   Sampling   `json:"sampling"`
	// JSONSchema constrains the output to JSON (an empty object schema means
	// any JSON object).
	JSONSchema json.RawMessage `json:"json_schema,omitempty"`
	// TemplateKwargs reach the chat template (e.g. enable_thinking).
	TemplateKwargs map[string]any `json:"template_kwargs,omitempty"`
	// CountOnly renders and tokenizes the prompt and generates nothing: the
	// final chunk's usage counts the prompt (Anthropic's count_tokens).
	CountOnly bool `json:"count_only,omitempty"`
	// KeepAlive is how long an instance placed on demand stays loaded once
	// idle after this request (Ollama's keep_alive): 0 unloads it right
	// after, negative never; nil is the node's default (SKULK_KEEP_ALIVE),
	// which the gateway stamps. Instances placed explicitly never unload.
	KeepAlive *time.Duration `json:"keep_alive,omitempty"`
	// Trace asks the runner of a split model for each rank's timings of
	// the request (Chunk.Ranks); the worker sets it while the cluster's
	// tracing is on.
	Trace bool `json:"trace,omitempty"`
}

// ChunkKind says what a Chunk carries.
type ChunkKind string

// Chunk kinds.
const (
	ChunkDelta    ChunkKind = "delta"     // Content and/or Reasoning text; the first, empty, carries Usage.PromptTokens
	ChunkToolCall ChunkKind = "tool_call" // a complete tool call
	ChunkDone     ChunkKind = "done"      // the last chunk: FinishReason and Usage
	ChunkError    ChunkKind = "error"     // the last chunk of a failed task
)

// Finish reasons.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
	FinishCancelled = "cancelled"
)

// TokenLogprob is the log-probability of one generated token and its best
// alternatives.
type TokenLogprob struct {
	Token   string       `json:"token"`
	Bytes   []byte       `json:"bytes,omitempty"`
	Logprob float32      `json:"logprob"`
	Top     []TopLogprob `json:"top,omitempty"`
}

// TopLogprob is one alternative at a position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Bytes   []byte  `json:"bytes,omitempty"`
	Logprob float32 `json:"logprob"`
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// CachedTokens of the prompt's were served from the runner's prefix
	// cache instead of being evaluated.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// Timings are the generation's counts and times, on the done chunk.
	Timings *Timings `json:"timings,omitempty"`
}

// Timings are one generation's token counts and times, in llama-server's
// names and units: the prompt tokens evaluated (cached ones apart) and the
// time to read them, the tokens generated and the time from the first to
// the last.
type Timings struct {
	CacheN              int     `json:"cache_n"`
	PromptN             int     `json:"prompt_n"`
	PromptMs            float64 `json:"prompt_ms"`
	PromptPerTokenMs    float64 `json:"prompt_per_token_ms"`
	PromptPerSecond     float64 `json:"prompt_per_second"`
	PredictedN          int     `json:"predicted_n"`
	PredictedMs         float64 `json:"predicted_ms"`
	PredictedPerTokenMs float64 `json:"predicted_per_token_ms"`
	PredictedPerSecond  float64 `json:"predicted_per_second"`
	// DraftN counts the tokens speculative decoding drafted and verified,
	// DraftNAccepted those of them the model's own greedy choice matched
	// (llama-server's names); absent when it did not draft.
	DraftN         int `json:"draft_n,omitempty"`
	DraftNAccepted int `json:"draft_n_accepted,omitempty"`
}

// NewTimings fills the rates of n tokens in ms milliseconds.
func NewTimings(cacheN, promptN int, promptMs float64, predictedN int, predictedMs float64) *Timings {
	per := func(n int, ms float64) (perToken, perSecond float64) {
		if n <= 0 || ms <= 0 {
			return 0, 0
		}
		return ms / float64(n), 1000 * float64(n) / ms
	}
	t := &Timings{CacheN: cacheN, PromptN: promptN, PromptMs: promptMs, PredictedN: predictedN, PredictedMs: predictedMs}
	t.PromptPerTokenMs, t.PromptPerSecond = per(promptN, promptMs)
	t.PredictedPerTokenMs, t.PredictedPerSecond = per(predictedN, predictedMs)
	return t
}

// Chunk is one piece of a streamed answer.
type Chunk struct {
	Kind         ChunkKind      `json:"kind"`
	Content      string         `json:"content,omitempty"`
	Reasoning    string         `json:"reasoning,omitempty"`
	ToolCall     *ToolCall      `json:"tool_call,omitempty"`
	Logprobs     []TokenLogprob `json:"logprobs,omitempty"`
	FinishReason string         `json:"finish_reason,omitempty"`
	// StopSequence is the request's stop sequence that ended the answer,
	// on a done chunk whose finish reason is "stop"; "" when the model's
	// end-of-turn token (or anything else) ended it.
	StopSequence string       `json:"stop_sequence,omitempty"`
	Usage        *Usage       `json:"usage,omitempty"`
	Error        *fault.Error `json:"error,omitempty"`
	// Embeddings are the vectors of an embedding task, on its done chunk
	// (whose Usage counts the inputs' tokens).
	Embeddings [][]float32 `json:"embeddings,omitempty"`
	// Ranks are a traced request's timings on each rank of a split
	// model, on its done chunk (Request.Trace); the worker turns them
	// into spans.
	Ranks []RankTiming `json:"ranks,omitempty"`
}

// RankTiming is what one rank of a split model did for a traced request
// (as sequence.RankTiming, which converts to it): when it opened the
// sequence and released it (by its own clock), and the time its prefill
// chunks and the decode steps the request was in kept it busy.
type RankTiming struct {
	Rank        int           `json:"rank"`
	Opened      time.Time     `json:"opened"`
	Released    time.Time     `json:"released"`
	PrefillRows int           `json:"prefill_rows"`
	PrefillBusy time.Duration `json:"prefill_busy_ns"`
	DecodeSteps int           `json:"decode_steps"`
	DecodeBusy  time.Duration `json:"decode_busy_ns"`
}

// EmptyDelta reports whether c is a delta with no text and no logprobs,
// such as the one that carries the prompt count ahead of the answer.
func (c *Chunk) EmptyDelta() bool {
	return c.Kind == ChunkDelta && c.Content == "" && c.Reasoning == "" && len(c.Logprobs) == 0
}
