package request

import (
	"fmt"

	"github.com/skulk/skulk/internal/platform/fault"
)

// Bounds of one embedding request. MaxEmbedInputs is OpenAI's own limit;
// MaxEmbedBytes bounds the text of all inputs together, so that a request
// and its answer fit a runner's protocol line.
const (
	MaxEmbedInputs = 2048
	MaxEmbedBytes  = 2 << 20
)

// EmbedRequest is one normalized embedding request: one vector per input.
type EmbedRequest struct {
	Model  string   `json:"model"`
	Inputs []string `json:"inputs"`
	// Normalize scales each vector to unit L2 norm; nil means true (the
	// vectors OpenAI's API returns are unit vectors). False returns the
	// pooled vectors as the model computes them.
	Normalize *bool `json:"normalize,omitempty"`
	// Dimensions is the length the client expects: 0 means the model's
	// own; any other value is refused unless it equals the model's own
	// (vectors are never truncated or projected).
	Dimensions int `json:"dimensions,omitempty"`
}

// Normalized reports whether the vectors are to be unit vectors.
func (r *EmbedRequest) Normalized() bool { return r.Normalize == nil || *r.Normalize }

// EmbedResult is the answer to an EmbedRequest: Embeddings[i] embeds
// Inputs[i], and PromptTokens counts the tokens of every input (special
// tokens included).
type EmbedResult struct {
	Embeddings   [][]float32 `json:"embeddings"`
	PromptTokens int         `json:"prompt_tokens"`
}

// Validate checks what every format shares: a model, between one and
// MaxEmbedInputs non-empty inputs of at most MaxEmbedBytes in all, and a
// non-negative dimensions. Whether Dimensions matches the model is for the
// runner to say.
func (r *EmbedRequest) Validate() error {
	if r.Model == "" {
		return fault.ParamErrorf("model", "model is required")
	}
	if len(r.Inputs) == 0 {
		return fault.ParamErrorf("input", "input must hold at least one string")
	}
	if len(r.Inputs) > MaxEmbedInputs {
		return fault.ParamErrorf("input", "input holds %d strings; at most %d are allowed per request", len(r.Inputs), MaxEmbedInputs)
	}
	total := 0
	for i, in := range r.Inputs {
		if in == "" {
			return fault.ParamErrorf("input", "input[%d] is empty; every input must hold text", i)
		}
		total += len(in)
	}
	if total > MaxEmbedBytes {
		return &fault.Error{Class: fault.ClassTooLarge, Param: "input",
			Message: fmt.Sprintf("the inputs hold %d bytes of text; at most %d are allowed per request", total, MaxEmbedBytes)}
	}
	if r.Dimensions < 0 {
		return fault.ParamErrorf("dimensions", "dimensions must not be negative, got %d", r.Dimensions)
	}
	return nil
}

// TaskPayload is what a task carries from the API node that accepted it to
// the runner that serves it: a generation request or an embedding request,
// exactly one of them.
type TaskPayload struct {
	Generate *Request      `json:"generate,omitempty"`
	Embed    *EmbedRequest `json:"embed,omitempty"`
}
