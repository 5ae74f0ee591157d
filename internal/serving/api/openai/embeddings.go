package openai

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/wirejson"
	"github.com/skulk/skulk/internal/serving/request"
)

// POST /v1/embeddings takes model, input (a string or an array of strings),
// encoding_format ("float", the default, or "base64": the little-endian
// float32 bytes of each vector, in standard base64), dimensions (accepted
// only when it is the model's own size, which the runner checks) and user
// (ignored). Token inputs (an array of integers, or of arrays of integers)
// are refused: this server embeds text. Vectors are unit vectors, as
// OpenAI's are.

// DecodedEmbedding is a decoded embeddings request: the normalized request
// plus the encoding the answer uses.
type DecodedEmbedding struct {
	Request request.EmbedRequest
	Base64  bool // encoding_format "base64"
}

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format"`
	Dimensions     *int64          `json:"dimensions"`
	User           *string         `json:"user"` // accepted and ignored, but type-checked
}

// DecodeEmbeddingRequest decodes and validates a POST /v1/embeddings body.
// Every error is a *fault.Error naming the field.
func DecodeEmbeddingRequest(body []byte) (DecodedEmbedding, error) {
	var w embeddingRequest
	if err := wirejson.Unmarshal(body, &w); err != nil {
		return DecodedEmbedding{}, err
	}
	d := DecodedEmbedding{Request: request.EmbedRequest{Model: w.Model}}
	inputs, err := embeddingInputs(w.Input)
	if err != nil {
		return DecodedEmbedding{}, err
	}
	d.Request.Inputs = inputs
	if f := w.EncodingFormat; f != nil {
		switch *f {
		case "float":
		case "base64":
			d.Base64 = true
		default:
			return DecodedEmbedding{}, fault.ParamErrorf("encoding_format", "encoding_format must be \"float\" or \"base64\", got %s", fault.Quote(*f))
		}
	}
	if n := w.Dimensions; n != nil {
		if *n < 1 || *n > math.MaxInt32 {
			return DecodedEmbedding{}, fault.ParamErrorf("dimensions", "dimensions must be a positive integer, got %d", *n)
		}
		d.Request.Dimensions = int(*n)
	}
	if err := d.Request.Validate(); err != nil {
		return DecodedEmbedding{}, err
	}
	return d, nil
}

// embeddingInputs accepts a string or an array of strings.
func embeddingInputs(raw json.RawMessage) ([]string, error) {
	if wirejson.IsNull(raw) {
		return nil, fault.ParamErrorf("input", "input is required: a string or an array of strings")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fault.ParamErrorf("input", "input is not a valid JSON string: %v", err)
		}
		return []string{s}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fault.ParamErrorf("input", "input must be a string or an array of strings")
	}
	out := make([]string, len(list))
	for i, item := range list {
		if err := json.Unmarshal(item, &out[i]); err != nil {
			if len(item) > 0 && (item[0] == '[' || item[0] == '-' || (item[0] >= '0' && item[0] <= '9')) {
				return nil, fault.ParamErrorf("input", "input[%d] is a token array or a token; this server embeds text only, so send strings", i)
			}
			return nil, fault.ParamErrorf("input", "input[%d] must be a string", i)
		}
	}
	return out, nil
}

// EmbeddingList is the answer of POST /v1/embeddings.
type EmbeddingList struct {
	Object string          `json:"object"` // "list"
	Data   []EmbeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  EmbeddingUsage  `json:"usage"`
}

// EmbeddingData is the vector of one input.
type EmbeddingData struct {
	Object    string `json:"object"` // "embedding"
	Index     int    `json:"index"`
	Embedding Vector `json:"embedding"`
}

// EmbeddingUsage counts the tokens of the inputs.
type EmbeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Vector is an embedding as it goes on the wire: an array of numbers, or
// with Base64 set a string holding the little-endian float32 bytes in
// standard base64.
type Vector struct {
	Values []float32
	Base64 bool
}

// MarshalJSON writes the vector in its encoding.
func (v Vector) MarshalJSON() ([]byte, error) {
	if v.Base64 {
		return json.Marshal(EncodeBase64(v.Values))
	}
	if v.Values == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(v.Values)
}

// UnmarshalJSON reads either encoding; a string sets Base64.
func (v *Vector) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		vals, err := DecodeBase64(s)
		*v = Vector{Values: vals, Base64: true}
		return err
	}
	*v = Vector{}
	return json.Unmarshal(b, &v.Values)
}

// EncodeBase64 returns vals as little-endian float32 bytes in standard
// base64, as OpenAI's encoding_format "base64" does.
func EncodeBase64(vals []float32) string {
	b := make([]byte, 4*len(vals))
	for i, x := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// ErrBase64Vector reports a base64 embedding that is not whole float32s.
var ErrBase64Vector = errors.New("openai: a base64 embedding must hold whole little-endian float32s")

// DecodeBase64 is the inverse of EncodeBase64.
func DecodeBase64(s string) ([]float32, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("openai: base64 embedding: %w", err)
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w (%d bytes)", ErrBase64Vector, len(b))
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// EmbeddingResponse builds the answer to d from the runner's result. The
// result must hold one vector per input.
func EmbeddingResponse(d DecodedEmbedding, res request.EmbedResult) (EmbeddingList, error) {
	if len(res.Embeddings) != len(d.Request.Inputs) {
		return EmbeddingList{}, fmt.Errorf("openai: %d embeddings for %d inputs", len(res.Embeddings), len(d.Request.Inputs))
	}
	out := EmbeddingList{Object: "list", Data: make([]EmbeddingData, len(res.Embeddings)), Model: d.Request.Model,
		Usage: EmbeddingUsage{PromptTokens: res.PromptTokens, TotalTokens: res.PromptTokens}}
	for i, v := range res.Embeddings {
		out.Data[i] = EmbeddingData{Object: "embedding", Index: i, Embedding: Vector{Values: v, Base64: d.Base64}}
	}
	return out, nil
}
