package openai

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

func TestDecodeEmbeddingRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want DecodedEmbedding
	}{
		{name: "string", body: `{"model":"m","input":"hello"}`,
			want: DecodedEmbedding{Request: request.EmbedRequest{Model: "m", Inputs: []string{"hello"}}}},
		{name: "array", body: `{"model":"m","input":["a","b c"],"encoding_format":"float","user":"u1","extra":true}`,
			want: DecodedEmbedding{Request: request.EmbedRequest{Model: "m", Inputs: []string{"a", "b c"}}}},
		{name: "base64_and_dimensions", body: `{"model":"m","input":["a"],"encoding_format":"base64","dimensions":384}`,
			want: DecodedEmbedding{Base64: true, Request: request.EmbedRequest{Model: "m", Inputs: []string{"a"}, Dimensions: 384}}},
		{name: "nulls_are_defaults", body: `{"model":"m","input":"a","encoding_format":null,"dimensions":null,"user":null}`,
			want: DecodedEmbedding{Request: request.EmbedRequest{Model: "m", Inputs: []string{"a"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeEmbeddingRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("decoded\n %+v\nwant\n %+v", got, tt.want)
			}
			if !got.Request.Normalized() {
				t.Fatal("OpenAI's embeddings are unit vectors; the request does not ask for them")
			}
		})
	}
}

func TestDecodeEmbeddingRequestRefusals(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		param     string
		inMessage string
	}{
		{"input_missing", `{"model":"m"}`, "input", "required"},
		{"input_null", `{"model":"m","input":null}`, "input", "required"},
		{"input_empty_array", `{"model":"m","input":[]}`, "input", "at least one"},
		{"input_empty_string", `{"model":"m","input":["a",""]}`, "input", "input[1] is empty"},
		{"input_tokens", `{"model":"m","input":[1,2,3]}`, "input", "token"},
		{"input_token_arrays", `{"model":"m","input":[[1,2],[3]]}`, "input", "token array"},
		{"input_number", `{"model":"m","input":5}`, "input", "string or an array of strings"},
		{"input_object", `{"model":"m","input":{"text":"a"}}`, "input", "string or an array of strings"},
		{"input_mixed", `{"model":"m","input":["a",{"b":1}]}`, "input", "input[1] must be a string"},
		{"input_too_many", `{"model":"m","input":[` + strings.Repeat(`"a",`, request.MaxEmbedInputs) + `"a"]}`, "input", "at most 2048"},
		{"model_missing", `{"input":"x"}`, "model", "required"},
		{"model_number", `{"model":3,"input":"x"}`, "model", "string"},
		{"encoding_format_unknown", `{"model":"m","input":"x","encoding_format":"int8"}`, "encoding_format", `"float" or "base64"`},
		{"dimensions_zero", `{"model":"m","input":"x","dimensions":0}`, "dimensions", "positive"},
		{"dimensions_negative", `{"model":"m","input":"x","dimensions":-3}`, "dimensions", "positive"},
		{"dimensions_fraction", `{"model":"m","input":"x","dimensions":1.5}`, "dimensions", "integer"},
		{"user_number", `{"model":"m","input":"x","user":7}`, "user", "string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeEmbeddingRequest([]byte(tt.body))
			checkInvalid(t, err, tt.param, tt.inMessage)
		})
	}
	t.Run("input_too_large", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"model": "m", "input": strings.Repeat("x", request.MaxEmbedBytes+1)})
		_, err := DecodeEmbeddingRequest(body)
		if e, ok := errors.AsType[*fault.Error](err); !ok || e.Class != fault.ClassTooLarge || e.Param != "input" {
			t.Fatalf("error %#v, want too_large on input", err)
		}
	})
}

// TestBase64 checks that the base64 encoding is exactly the little-endian
// float32 bytes (the known answer) and round-trips every bit pattern.
func TestBase64(t *testing.T) {
	// 1.0 is 0x3f800000, -2.0 is 0xc0000000: bytes 00 00 80 3f 00 00 00 c0.
	if got := EncodeBase64([]float32{1, -2}); got != "AACAPwAAAMA=" {
		t.Fatalf("EncodeBase64([1 -2]) = %q, want %q", got, "AACAPwAAAMA=")
	}
	vals := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -3.4028235e38, 0.1, float32(math.Inf(1)), float32(math.NaN()), 0.70710677}
	got, err := DecodeBase64(EncodeBase64(vals))
	if err != nil {
		t.Fatal(err)
	}
	for i := range vals {
		if math.Float32bits(got[i]) != math.Float32bits(vals[i]) {
			t.Errorf("value %d: %08x, want %08x", i, math.Float32bits(got[i]), math.Float32bits(vals[i]))
		}
	}
	if _, err := DecodeBase64("AACAPwAA"); !errors.Is(err, ErrBase64Vector) {
		t.Errorf("6 bytes decoded: %v, want ErrBase64Vector", err)
	}
	if _, err := DecodeBase64("not base64!"); err == nil {
		t.Error("invalid base64 decoded")
	}
}

func TestEmbeddingResponse(t *testing.T) {
	res := request.EmbedResult{Embeddings: [][]float32{{0.6, -0.8}, {1, 0}}, PromptTokens: 7}
	tests := []struct {
		name   string
		base64 bool
		want   string
	}{
		{name: "float", want: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.6,-0.8]},` +
			`{"object":"embedding","index":1,"embedding":[1,0]}],"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}`},
		{name: "base64", base64: true, want: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"mpkZP83MTL8="},` +
			`{"object":"embedding","index":1,"embedding":"AACAPwAAAAA="}],"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DecodedEmbedding{Base64: tt.base64, Request: request.EmbedRequest{Model: "m", Inputs: []string{"a", "b"}}}
			list, err := EmbeddingResponse(d, res)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(list)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("answer\n %s\nwant\n %s", b, tt.want)
			}
			var back EmbeddingList
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			for i, v := range res.Embeddings {
				if !reflect.DeepEqual(back.Data[i].Embedding.Values, v) || back.Data[i].Embedding.Base64 != tt.base64 {
					t.Fatalf("vector %d read back as %+v, want %v", i, back.Data[i].Embedding, v)
				}
			}
		})
	}
	d := DecodedEmbedding{Request: request.EmbedRequest{Model: "m", Inputs: []string{"a"}}}
	if _, err := EmbeddingResponse(d, res); err == nil {
		t.Fatal("two vectors for one input were answered")
	}
}

func FuzzDecodeEmbeddingRequest(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `"x"`, `{"model":`,
		`{"model":"m","input":"hello"}`,
		`{"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":384}`,
		`{"model":"m","input":[[1,2]],"dimensions":1e300}`,
		`{"model":"m","input":["a",""],"user":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := DecodeEmbeddingRequest(body)
		if err != nil {
			if c := fault.ClassOf(err); c != fault.ClassInvalid && c != fault.ClassTooLarge {
				t.Fatalf("error of class %q: %v", c, err)
			}
			return
		}
		if err := d.Request.Validate(); err != nil {
			t.Fatalf("accepted a request that fails Validate: %v", err)
		}
		if _, err := json.Marshal(d.Request); err != nil {
			t.Fatalf("accepted request does not marshal: %v", err)
		}
	})
}
