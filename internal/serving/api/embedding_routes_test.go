package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bert "github.com/skulk/skulk/internal/engine/encoder"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/openai"
	"github.com/skulk/skulk/internal/serving/request"
)

// encoderBackend is the test Backend with an embedding path: it embeds
// with synth-bert's encoder in this process (the runner's arithmetic,
// without the subprocess). Model "synth-bert" embeds, "echo" is a text
// model that produces no embeddings, any other has no ready instance.
type encoderBackend struct {
	*testBackend
	enc *bert.Encoder
}

func (b *encoderBackend) Embed(ctx context.Context, req request.EmbedRequest) (request.EmbedResult, error) {
	switch req.Model {
	case "synth-bert":
	case "echo":
		return request.EmbedResult{}, fault.Errorf(fault.ClassInvalid, "this model does not produce embeddings")
	default:
		return request.EmbedResult{}, &fault.Error{Class: fault.ClassNotFound, Param: "model", Message: fmt.Sprintf("model %q has no ready instance", req.Model)}
	}
	if err := req.Validate(); err != nil {
		return request.EmbedResult{}, err
	}
	if n := b.enc.Config().NEmbd; req.Dimensions != 0 && req.Dimensions != n {
		return request.EmbedResult{}, fault.ParamErrorf("dimensions", "model %s produces %d-dimensional embeddings", req.Model, n)
	}
	var res request.EmbedResult
	for _, in := range req.Inputs {
		ids := b.enc.Tokenize(in)
		emb, err := b.enc.Embed(ids)
		if err != nil {
			return request.EmbedResult{}, err
		}
		res.Embeddings = append(res.Embeddings, emb.Normalized)
		res.PromptTokens += len(ids)
	}
	return res, nil
}

// f32 is a float32 written in its shortest round-trip form.
type f32 float32

func (v *f32) UnmarshalJSON(b []byte) error {
	x, err := strconv.ParseFloat(string(b), 32)
	*v = f32(x)
	return err
}

// bertReference is llama.cpp's embeddings of synth-bert.
type bertReference struct {
	NEmbd     int `json:"n_embd"`
	Tolerance struct {
		Table struct {
			Embedding float64 `json:"embedding_max_abs"`
		} `json:"engine_with_ggml_f16_gelu_table"`
	} `json:"tolerance"`
	Texts []struct {
		Name      string  `json:"name"`
		Text      string  `json:"text"`
		IDs       []int32 `json:"ids"`
		Embedding []f32   `json:"embedding"`
	} `json:"texts"`
}

// newEmbedFixture serves the API with an encoderBackend, skipping the test
// when the shared models are absent.
func newEmbedFixture(t *testing.T, cfg Config) (*fixture, bertReference) {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "shared", "models", "synthetic", "synth-bert.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("skipping: %s is absent (the shared models are not checked out)", path)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	enc, err := bert.Open(f, bert.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "synthetic", "synth-bert.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref bertReference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Texts) < 4 || ref.Tolerance.Table.Embedding == 0 {
		t.Fatal("the reference lacks texts or tolerances")
	}
	tb := newTestBackend(t)
	logs := &syncBuffer{}
	srv := httptest.NewServer(New(cfg, every(&encoderBackend{testBackend: tb, enc: enc}), slog.New(slog.NewTextHandler(logs, nil))))
	t.Cleanup(srv.Close)
	return &fixture{url: srv.URL, b: tb, log: logs, key: cfg.APIKey}, ref
}

// embeddingAnswer is POST /v1/embeddings' answer, decoded strictly.
type embeddingAnswer struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func decodeEmbeddings(t *testing.T, r response) embeddingAnswer {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var a embeddingAnswer
	dec := json.NewDecoder(strings.NewReader(string(r.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("answer %s: %v", r.body, err)
	}
	if a.Object != "list" {
		t.Fatalf("object %q, want list", a.Object)
	}
	for i, d := range a.Data {
		if d.Object != "embedding" || d.Index != i {
			t.Fatalf("data[%d] is %q with index %d", i, d.Object, d.Index)
		}
	}
	return a
}

// TestEmbeddingsRoute embeds llama.cpp's reference texts through the HTTP
// route in both encodings: the float vectors match llama.cpp within the
// reference's bound, and the base64 vectors decode to the float ones bit
// for bit.
func TestEmbeddingsRoute(t *testing.T) {
	f, ref := newEmbedFixture(t, Config{})
	var inputs []string
	tokens := 0
	for _, tc := range ref.Texts {
		inputs = append(inputs, tc.Text)
		tokens += len(tc.IDs)
	}
	in, _ := json.Marshal(inputs)
	floats := decodeEmbeddings(t, f.do(t, "POST", "/v1/embeddings", `{"model":"synth-bert","input":`+string(in)+`}`))
	b64 := decodeEmbeddings(t, f.do(t, "POST", "/v1/embeddings", `{"model":"synth-bert","input":`+string(in)+`,"encoding_format":"base64","dimensions":`+strconv.Itoa(ref.NEmbd)+`}`))
	for _, a := range []embeddingAnswer{floats, b64} {
		if a.Model != "synth-bert" || len(a.Data) != len(inputs) || a.Usage.PromptTokens != tokens || a.Usage.TotalTokens != tokens {
			t.Fatalf("answer for model %q with %d vectors and usage %+v; want synth-bert, %d, %d tokens", a.Model, len(a.Data), a.Usage, len(inputs), tokens)
		}
	}
	for i, tc := range ref.Texts {
		var vf []float32
		if err := json.Unmarshal(floats.Data[i].Embedding, &vf); err != nil {
			t.Fatalf("%s: float embedding %s: %v", tc.Name, floats.Data[i].Embedding, err)
		}
		var s string
		if err := json.Unmarshal(b64.Data[i].Embedding, &s); err != nil {
			t.Fatalf("%s: base64 embedding %s is not a string: %v", tc.Name, b64.Data[i].Embedding, err)
		}
		vb, err := openai.DecodeBase64(s)
		if err != nil {
			t.Fatal(err)
		}
		if len(vf) != ref.NEmbd || len(vb) != ref.NEmbd {
			t.Fatalf("%s: %d float and %d base64 dimensions, want %d", tc.Name, len(vf), len(vb), ref.NEmbd)
		}
		var worst float64
		for j := range vf {
			if math.Float32bits(vf[j]) != math.Float32bits(vb[j]) {
				t.Fatalf("%s[%d]: float %v, base64 %v", tc.Name, j, vf[j], vb[j])
			}
			worst = max(worst, math.Abs(float64(vf[j])-float64(tc.Embedding[j])))
		}
		if worst > ref.Tolerance.Table.Embedding {
			t.Errorf("%s: max |Δ| %.3g against llama.cpp, bound %g", tc.Name, worst, ref.Tolerance.Table.Embedding)
		}
	}
	// A single string is one input.
	one := decodeEmbeddings(t, f.do(t, "POST", "/v1/embeddings", `{"model":"synth-bert","input":"Hello world"}`))
	if len(one.Data) != 1 || one.Usage.PromptTokens != len(ref.Texts[0].IDs) {
		t.Fatalf("single input: %d vectors, usage %+v", len(one.Data), one.Usage)
	}
}

func TestEmbeddingsRouteErrors(t *testing.T) {
	f, ref := newEmbedFixture(t, Config{APIKey: "sk-embed"})
	tests := []struct {
		name      string
		body      string
		status    int
		typ       string
		inMessage string
		param     string
	}{
		{name: "other_dimensions", body: fmt.Sprintf(`{"model":"synth-bert","input":"a","dimensions":%d}`, ref.NEmbd*2), status: 400,
			typ: "invalid_request_error", inMessage: fmt.Sprintf("%d-dimensional", ref.NEmbd), param: "dimensions"},
		{name: "token_input", body: `{"model":"synth-bert","input":[101,7592,102]}`, status: 400, typ: "invalid_request_error", inMessage: "text only", param: "input"},
		{name: "empty_input", body: `{"model":"synth-bert","input":[]}`, status: 400, typ: "invalid_request_error", inMessage: "at least one", param: "input"},
		{name: "bad_encoding", body: `{"model":"synth-bert","input":"a","encoding_format":"binary"}`, status: 400, typ: "invalid_request_error", inMessage: "base64", param: "encoding_format"},
		{name: "not_json", body: `{"model":`, status: 400, typ: "invalid_request_error", inMessage: "not valid JSON"},
		{name: "text_model", body: `{"model":"echo","input":"a"}`, status: 400, typ: "invalid_request_error", inMessage: "does not produce embeddings"},
		{name: "unknown_model", body: `{"model":"nope","input":"a"}`, status: 404, typ: "not_found_error", inMessage: "no ready instance", param: "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := wantError(t, f.do(t, "POST", "/v1/embeddings", tt.body), tt.status, tt.typ, tt.inMessage)
			if got := doc.Error.Param; (got == nil && tt.param != "") || (got != nil && *got != tt.param) {
				t.Errorf("param %v, want %q", got, tt.param)
			}
		})
	}
	t.Run("no_key", func(t *testing.T) {
		anon := *f
		anon.key = ""
		wantError(t, anon.do(t, "POST", "/v1/embeddings", `{"model":"synth-bert","input":"a"}`), 401, "authentication_error", "")
	})
}

// TestEmbeddingsNotImplemented checks the answer of a node whose Backend
// has no embedding path.
func TestEmbeddingsNotImplemented(t *testing.T) {
	f := newFixture(t, Config{Now: func() time.Time { return time.Unix(0, 0) }})
	wantError(t, f.do(t, "POST", "/v1/embeddings", `{"model":"echo","input":"a"}`), http.StatusNotImplemented, "service_unavailable_error", "cannot serve embeddings")
}
