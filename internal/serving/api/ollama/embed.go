package ollama

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/wirejson"
	"github.com/skulk/skulk/internal/serving/request"
)

// DecodeEmbedRequest decodes and validates a POST /api/embed body: model,
// input (a string or an array of strings), dimensions (accepted only when it
// is the model's own size, which the runner checks); truncate is
// type-checked and ignored (an input longer than the model's context is
// refused, never cut), keep_alive is checked and ignored like the
// generation endpoints', options are accepted and ignored (none changes an
// embedding). The vectors are unit vectors, as Ollama's are.
//
// An empty input ("" or []) is Ollama's "load the model" idiom: the request
// comes back with no inputs and no error, and the answer holds no vectors.
func DecodeEmbedRequest(body []byte) (request.EmbedRequest, error) {
	var w struct {
		Model      string          `json:"model"`
		Input      json.RawMessage `json:"input"`
		Truncate   *bool           `json:"truncate"`
		Dimensions *int64          `json:"dimensions"`
		KeepAlive  json.RawMessage `json:"keep_alive"`
		Options    json.RawMessage `json:"options"`
	}
	if err := wirejson.Unmarshal(body, &w); err != nil {
		return request.EmbedRequest{}, err
	}
	if w.Model == "" {
		return request.EmbedRequest{}, fault.ParamErrorf("model", "model is required")
	}
	if _, err := keepAlive(w.KeepAlive); err != nil {
		return request.EmbedRequest{}, err
	}
	req := request.EmbedRequest{Model: w.Model}
	if w.Dimensions != nil {
		if *w.Dimensions < 0 || *w.Dimensions > 1<<20 {
			return request.EmbedRequest{}, fault.ParamErrorf("dimensions", "dimensions must be between 0 and %d, got %d", 1<<20, *w.Dimensions)
		}
		req.Dimensions = int(*w.Dimensions)
	}
	in := bytes.TrimSpace(w.Input)
	switch {
	case wirejson.IsNull(in):
		return request.EmbedRequest{}, fault.ParamErrorf("input", "input is required: a string or an array of strings")
	case in[0] == '"':
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return request.EmbedRequest{}, fault.ParamErrorf("input", "input is not a valid JSON string: %v", err)
		}
		if s != "" {
			req.Inputs = []string{s}
		}
	default:
		if err := json.Unmarshal(in, &req.Inputs); err != nil {
			return request.EmbedRequest{}, fault.ParamErrorf("input", "input must be a string or an array of strings (token arrays are not supported)")
		}
	}
	if len(req.Inputs) == 0 {
		req.Inputs = nil
		return req, nil
	}
	if err := req.Validate(); err != nil {
		return request.EmbedRequest{}, err
	}
	return req, nil
}

// DecodeEmbeddingsRequest decodes a POST /api/embeddings body (Ollama's
// older endpoint): model and prompt, one input. As in Ollama, its vector is
// not normalized, and an empty prompt gives an empty vector.
func DecodeEmbeddingsRequest(body []byte) (request.EmbedRequest, error) {
	var w struct {
		Model     string          `json:"model"`
		Prompt    *string         `json:"prompt"`
		KeepAlive json.RawMessage `json:"keep_alive"`
		Options   json.RawMessage `json:"options"`
	}
	if err := wirejson.Unmarshal(body, &w); err != nil {
		return request.EmbedRequest{}, err
	}
	if w.Model == "" {
		return request.EmbedRequest{}, fault.ParamErrorf("model", "model is required")
	}
	if _, err := keepAlive(w.KeepAlive); err != nil {
		return request.EmbedRequest{}, err
	}
	if w.Prompt == nil {
		return request.EmbedRequest{}, fault.ParamErrorf("prompt", "prompt is required")
	}
	req := request.EmbedRequest{Model: w.Model, Normalize: new(bool)}
	if *w.Prompt == "" {
		return req, nil
	}
	req.Inputs = []string{*w.Prompt}
	if err := req.Validate(); err != nil {
		return request.EmbedRequest{}, err
	}
	return req, nil
}

// EmbedResponse is the POST /api/embed document. TotalDuration is measured
// at the API node; LoadDuration is always 0 (instances are placed ahead of
// requests).
type EmbedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	TotalDuration   int64       `json:"total_duration"`
	LoadDuration    int64       `json:"load_duration"`
	PromptEvalCount int         `json:"prompt_eval_count"`
}

// EmbedFrom returns the /api/embed answer for res; took is the time from
// the request's arrival to the result.
func EmbedFrom(model string, res request.EmbedResult, took time.Duration) EmbedResponse {
	e := res.Embeddings
	if e == nil {
		e = [][]float32{}
	}
	return EmbedResponse{Model: model, Embeddings: e, TotalDuration: max(0, took.Nanoseconds()), PromptEvalCount: res.PromptTokens}
}

// EmbeddingsResponse is the POST /api/embeddings document.
type EmbeddingsResponse struct {
	Embedding []float32 `json:"embedding"`
}

// EmbeddingsFrom returns the /api/embeddings answer for res (its first
// vector; none for an empty prompt).
func EmbeddingsFrom(res request.EmbedResult) EmbeddingsResponse {
	if len(res.Embeddings) == 0 {
		return EmbeddingsResponse{Embedding: []float32{}}
	}
	return EmbeddingsResponse{Embedding: res.Embeddings[0]}
}
