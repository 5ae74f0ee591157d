package ollama

import (
	"bytes"
	"encoding/json"

	"github.com/skulk/skulk/internal/infer"
)

// MaxEmbedInputs bounds the number of inputs of one POST /api/embed.
const MaxEmbedInputs = 2048

// EmbedRequest is a decoded POST /api/embed or POST /api/embeddings body.
type EmbedRequest struct {
	Model string
	Input []string
	// Truncate is Ollama's truncate (default true): cut inputs longer than
	// the context instead of failing.
	Truncate   bool
	Dimensions int // 0: the model's own
}

// DecodeEmbedRequest decodes a POST /api/embed body: model, input (a string
// or an array of strings), truncate, dimensions; keep_alive is checked and
// ignored like the generation endpoints'; options are accepted and ignored
// (no option changes an embedding).
func DecodeEmbedRequest(body []byte) (EmbedRequest, error) {
	var w struct {
		Model      string          `json:"model"`
		Input      json.RawMessage `json:"input"`
		Truncate   *bool           `json:"truncate"`
		Dimensions *int64          `json:"dimensions"`
		KeepAlive  json.RawMessage `json:"keep_alive"`
		Options    json.RawMessage `json:"options"`
	}
	if err := unmarshal(body, &w); err != nil {
		return EmbedRequest{}, err
	}
	if w.Model == "" {
		return EmbedRequest{}, infer.ParamErrorf("model", "model is required")
	}
	if err := keepAlive(w.KeepAlive); err != nil {
		return EmbedRequest{}, err
	}
	req := EmbedRequest{Model: w.Model, Truncate: w.Truncate == nil || *w.Truncate}
	if w.Dimensions != nil {
		if *w.Dimensions < 0 || *w.Dimensions > 1<<16 {
			return EmbedRequest{}, infer.ParamErrorf("dimensions", "dimensions must be between 0 and %d, got %d", 1<<16, *w.Dimensions)
		}
		req.Dimensions = int(*w.Dimensions)
	}
	in := bytes.TrimSpace(w.Input)
	switch {
	case isNull(in):
		return EmbedRequest{}, infer.ParamErrorf("input", "input is required: a string or an array of strings")
	case in[0] == '"':
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return EmbedRequest{}, infer.ParamErrorf("input", "input is not a valid JSON string: %v", err)
		}
		req.Input = []string{s}
	default:
		if err := json.Unmarshal(in, &req.Input); err != nil {
			return EmbedRequest{}, infer.ParamErrorf("input", "input must be a string or an array of strings")
		}
		if len(req.Input) > MaxEmbedInputs {
			return EmbedRequest{}, infer.ParamErrorf("input", "at most %d inputs are allowed, got %d", MaxEmbedInputs, len(req.Input))
		}
	}
	return req, nil
}

// DecodeEmbeddingsRequest decodes a POST /api/embeddings body (Ollama's
// older endpoint): model and prompt, one input.
func DecodeEmbeddingsRequest(body []byte) (EmbedRequest, error) {
	var w struct {
		Model     string          `json:"model"`
		Prompt    *string         `json:"prompt"`
		KeepAlive json.RawMessage `json:"keep_alive"`
		Options   json.RawMessage `json:"options"`
	}
	if err := unmarshal(body, &w); err != nil {
		return EmbedRequest{}, err
	}
	if w.Model == "" {
		return EmbedRequest{}, infer.ParamErrorf("model", "model is required")
	}
	if err := keepAlive(w.KeepAlive); err != nil {
		return EmbedRequest{}, err
	}
	if w.Prompt == nil {
		return EmbedRequest{}, infer.ParamErrorf("prompt", "prompt is required")
	}
	return EmbedRequest{Model: w.Model, Input: []string{*w.Prompt}, Truncate: true}, nil
}

// EmbedResponse is the POST /api/embed document.
type EmbedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	TotalDuration   int64       `json:"total_duration"`
	LoadDuration    int64       `json:"load_duration"`
	PromptEvalCount int         `json:"prompt_eval_count"`
}

// EmbeddingsResponse is the POST /api/embeddings document.
type EmbeddingsResponse struct {
	Embedding []float32 `json:"embedding"`
}
