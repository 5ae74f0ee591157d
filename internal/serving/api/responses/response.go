package responses

import (
	"encoding/json"
	"strings"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/openai"
	"github.com/skulk/skulk/internal/serving/api/wirejson"
	"github.com/skulk/skulk/internal/serving/request"
)

// Meta identifies one response: its id ("resp_" and a unique part), the
// model name echoed to the client, its creation time in Unix seconds, and
// the id of the response it continues. The caller reads the clock and
// mints the id.
type Meta struct {
	ID                 string
	Model              string
	Created            int64
	PreviousResponseID string
}

// IDPrefix starts every response id.
const IDPrefix = "resp_"

// Response statuses.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// Response is the Response object: the whole answer of POST /v1/responses
// and the payload of the response.* lifecycle events. output_text is not
// sent: the official SDKs compute it from output.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"` // "response"
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int64             `json:"max_output_tokens"`
	Metadata           map[string]string  `json:"metadata"`
	Model              string             `json:"model"`
	Output             []Item             `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          Reasoning          `json:"reasoning"`
	Temperature        *float64           `json:"temperature"`
	Text               TextConfig         `json:"text"`
	ToolChoice         any                `json:"tool_choice"`
	Tools              []FunctionTool     `json:"tools"`
	TopP               *float64           `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *Usage             `json:"usage"`
	User               string             `json:"user,omitempty"`
	// Timings are llama-server's extension field: the runner's prompt
	// and decode counts and times.
	Timings *request.Timings `json:"timings,omitempty"`
}

// ResponseError says why a response failed.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete.
type IncompleteDetails struct {
	Reason string `json:"reason"` // "max_output_tokens"
}

// Reasoning echoes the reasoning settings of the request.
type Reasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// TextConfig echoes text.format.
type TextConfig struct {
	Format    TextFormat `json:"format"`
	Verbosity *string    `json:"verbosity,omitempty"`
}

// TextFormat is text, json_object or json_schema.
type TextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// FunctionTool is a function tool as the Response object echoes it.
type FunctionTool struct {
	Type        string          `json:"type"` // "function"
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// ToolChoiceFunction is tool_choice naming one function.
type ToolChoiceFunction struct {
	Type string `json:"type"` // "function"
	Name string `json:"name"`
}

// Usage counts the tokens of one response.
type Usage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails breaks input tokens down: CachedTokens came from the
// runner's prefix cache.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails breaks output tokens down; runners do not count
// reasoning tokens apart, so this is 0.
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Item is one output item: a *MessageItem, *ReasoningItem or
// *FunctionCallItem.
type Item interface{ itemType() string }

// Item types.
const (
	TypeMessage      = "message"
	TypeReasoning    = "reasoning"
	TypeFunctionCall = "function_call"
)

// MessageItem is an assistant message.
type MessageItem struct {
	Type    string       `json:"type"` // "message"
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"` // "assistant"
	Content []OutputText `json:"content"`
}

// OutputText is the text part of a message.
type OutputText struct {
	Type        string    `json:"type"` // "output_text"
	Text        string    `json:"text"`
	Annotations []any     `json:"annotations"`
	Logprobs    []Logprob `json:"logprobs,omitempty"`
}

// Logprob is one generated token with its alternatives.
type Logprob struct {
	Token       string       `json:"token"`
	Bytes       []int        `json:"bytes"`
	Logprob     float64      `json:"logprob"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one alternative at a position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Bytes   []int   `json:"bytes"`
	Logprob float64 `json:"logprob"`
}

// ReasoningItem carries the model's reasoning as reasoning_text content;
// Skulk's models write no separate summary, so summary is empty.
type ReasoningItem struct {
	Type    string          `json:"type"` // "reasoning"
	ID      string          `json:"id"`
	Status  string          `json:"status"`
	Summary []SummaryText   `json:"summary"`
	Content []ReasoningText `json:"content"`
}

// SummaryText is one part of a reasoning summary.
type SummaryText struct {
	Type string `json:"type"` // "summary_text"
	Text string `json:"text"`
}

// ReasoningText is the reasoning text part of a reasoning item.
type ReasoningText struct {
	Type string `json:"type"` // "reasoning_text"
	Text string `json:"text"`
}

// FunctionCallItem is a call of a client function.
type FunctionCallItem struct {
	Type      string `json:"type"` // "function_call"
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

func (*MessageItem) itemType() string      { return TypeMessage }
func (*ReasoningItem) itemType() string    { return TypeReasoning }
func (*FunctionCallItem) itemType() string { return TypeFunctionCall }

func logprobs(in []request.TokenLogprob) []Logprob {
	out := make([]Logprob, 0, len(in))
	for _, t := range in {
		top := make([]TopLogprob, 0, len(t.Top))
		for _, a := range t.Top {
			top = append(top, TopLogprob{Token: a.Token, Logprob: float64(a.Logprob), Bytes: wirejson.ByteInts(a.Bytes, a.Token)})
		}
		out = append(out, Logprob{Token: t.Token, Logprob: float64(t.Logprob), Bytes: wirejson.ByteInts(t.Bytes, t.Token), TopLogprobs: top})
	}
	return out
}

// errorCode is the Response object's error code for a class: OpenAI's list
// knows server_error, rate_limit_exceeded and invalid_prompt among others.
func errorCode(c fault.Class) string {
	switch c {
	case fault.ClassInvalid, fault.ClassTooLarge:
		return "invalid_prompt"
	}
	return "server_error"
}

// eventCode is the code of an error event: OpenAI's error code for the class.
func eventCode(e *fault.Error) *string {
	doc := openai.ErrorFrom(e)
	if doc.Error.Code != nil {
		return doc.Error.Code
	}
	typ := doc.Error.Type
	return &typ
}

// joinText concatenates the texts of parts.
func joinText(parts []OutputText) string {
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}
