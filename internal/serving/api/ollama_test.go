package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/version"
	"github.com/skulk/skulk/internal/serving/api/ollama"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/testkit"
)

// ollamaBackend is the test backend with a catalog and a state document in
// the node's shapes (GET /models: {"object":"list","data":[card + placement]};
// GET /state: {"instances":{id:{model, backend, context_tokens, status}}}),
// which the Ollama model routes read.
type ollamaBackend struct {
	*testBackend
}

func (b ollamaBackend) Catalog(ctx context.Context) (any, error) {
	return map[string]any{"object": "list", "data": []map[string]any{
		{"model_id": "echo", "name": "Echo 1B", "files": []string{"echo-1B-Instruct-Q8_0.gguf"}, "architecture": "llama",
			"layers": 16, "hidden_size": 2048, "heads": 32, "kv_heads": 8, "head_dim": 64, "vocab_size": 128256,
			"context_length": 131072, "storage_bytes": 1321083072, "tasks": []string{"text-generation"},
			"capabilities": []string{"tools", "reasoning"}, "placement": "ready", "instances": []string{"inst-echo"}},
		{"model_id": "org/other", "architecture": "qwen2", "storage_bytes": 1000, "tasks": []string{"text-generation"},
			"placement": "ready", "instances": []string{"inst-other"}},
		{"model_id": "catalog-only", "architecture": "llama", "chat_template": "{{ messages }}", "tasks": []string{"text-generation"},
			"placement": "none", "instances": []string{}},
	}}, nil
}

func (b ollamaBackend) State(ctx context.Context) (any, error) {
	return map[string]any{"term": 3, "instances": map[string]any{
		"inst-echo":    map[string]any{"model": "echo", "backend": "native-cpu", "context_tokens": 8192, "status": "ready"},
		"inst-other":   map[string]any{"model": "org/other", "backend": "native-cpu", "context_tokens": 4096, "status": "ready"},
		"inst-pending": map[string]any{"model": "catalog-only", "backend": "native-cpu", "context_tokens": 4096, "status": "pending"},
	}}, nil
}

// Embed embeds each input of the echo model as the unit vector along
// (words, bytes), or the raw (words, bytes) when the request asks for no
// normalization. org/other is a model that does not embed; any other model
// has no ready instance, as in Generate.
func (b ollamaBackend) Embed(ctx context.Context, req request.EmbedRequest) (request.EmbedResult, error) {
	switch req.Model {
	case "echo":
	case "org/other":
		return request.EmbedResult{}, fault.ParamErrorf("model", "model %q does not produce embeddings", req.Model)
	default:
		return request.EmbedResult{}, &fault.Error{Class: fault.ClassNotFound, Param: "model",
			Message: fmt.Sprintf("model %q has no ready instance", req.Model)}
	}
	if req.Dimensions != 0 && req.Dimensions != 2 {
		return request.EmbedResult{}, fault.ParamErrorf("dimensions", "model %q embeds in 2 dimensions, not %d", req.Model, req.Dimensions)
	}
	var res request.EmbedResult
	for _, in := range req.Inputs {
		words := len(strings.Fields(in))
		v := []float32{float32(words), float32(len(in))}
		if req.Normalized() {
			n := float32(math.Hypot(float64(v[0]), float64(v[1])))
			v[0], v[1] = v[0]/n, v[1]/n
		}
		res.Embeddings = append(res.Embeddings, v)
		res.PromptTokens += words
	}
	return res, ctx.Err()
}

// noEmbedBackend is a test backend without the embedding capability.
type noEmbedBackend struct{ fullBackend }

// newOllamaFixture serves the API with the Ollama test backend on a
// loopback socket. Its clock advances 1 ms per reading, so the durations of
// an answer are non-zero and add up.
func newOllamaFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	return newOllamaFixtureWith(t, cfg, func(b fullBackend) fullBackend { return b })
}

// newOllamaFixtureWith is newOllamaFixture with the backend wrapped.
func newOllamaFixtureWith(t *testing.T, cfg Config, wrap func(fullBackend) fullBackend) *fixture {
	t.Helper()
	b := newTestBackend(t)
	logs := &syncBuffer{}
	var ticks atomic.Int64
	cfg.Now = func() time.Time { return time.Unix(1700000000, 0).Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
	srv := httptest.NewServer(New(cfg, every(wrap(ollamaBackend{b})), slog.New(slog.NewTextHandler(logs, nil))))
	t.Cleanup(srv.Close)
	return &fixture{url: srv.URL, b: b, log: logs, key: cfg.APIKey}
}

// ollamaLine is a line (or a whole answer) of /api/chat or /api/generate.
type ollamaLine struct {
	Model     string `json:"model"`
	CreatedAt string `json:"created_at"`
	Message   *struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		Thinking  string `json:"thinking"`
		ToolCalls []struct {
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"message"`
	Response           *string `json:"response"`
	Thinking           string  `json:"thinking"`
	Done               bool    `json:"done"`
	DoneReason         string  `json:"done_reason"`
	TotalDuration      *int64  `json:"total_duration"`
	LoadDuration       *int64  `json:"load_duration"`
	PromptEvalCount    *int    `json:"prompt_eval_count"`
	PromptEvalDuration *int64  `json:"prompt_eval_duration"`
	EvalCount          *int    `json:"eval_count"`
	EvalDuration       *int64  `json:"eval_duration"`
	Error              string  `json:"error"`
}

// ollamaLines splits an NDJSON body into its lines.
func ollamaLines(t *testing.T, body []byte) []ollamaLine {
	t.Helper()
	var out []ollamaLine
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var l ollamaLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// wantOllamaError checks an answer in Ollama's error shape: exactly
// {"error": "..."} with the status.
func wantOllamaError(t *testing.T, r response, status int, inMessage string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var doc struct {
		Error string `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil || doc.Error == "" {
		t.Fatalf("error body %s is not Ollama's error shape: %v", r.body, err)
	}
	if !strings.Contains(doc.Error, inMessage) {
		t.Errorf("error %q does not contain %q", doc.Error, inMessage)
	}
}

// checkFinal checks the metrics of a final line: every field present, the
// counts the echo backend reports, and durations that add up.
func checkFinal(t *testing.T, l ollamaLine, reason string, prompt, eval int) {
	t.Helper()
	if !l.Done || l.DoneReason != reason {
		t.Errorf("final line done %v done_reason %q, want true %q", l.Done, l.DoneReason, reason)
	}
	if l.TotalDuration == nil || l.LoadDuration == nil || l.PromptEvalCount == nil || l.PromptEvalDuration == nil || l.EvalCount == nil || l.EvalDuration == nil {
		t.Fatalf("final line lacks a metric: %+v", l)
	}
	if *l.PromptEvalCount != prompt || *l.EvalCount != eval {
		t.Errorf("counts prompt %d eval %d, want %d %d", *l.PromptEvalCount, *l.EvalCount, prompt, eval)
	}
	if *l.LoadDuration != 0 || *l.TotalDuration <= 0 || *l.PromptEvalDuration <= 0 ||
		*l.TotalDuration != *l.PromptEvalDuration+*l.EvalDuration {
		t.Errorf("durations total %d load %d prompt %d eval %d: want load 0 and total = prompt + eval > 0",
			*l.TotalDuration, *l.LoadDuration, *l.PromptEvalDuration, *l.EvalDuration)
	}
	if _, err := time.Parse(time.RFC3339Nano, l.CreatedAt); err != nil {
		t.Errorf("created_at %q: %v", l.CreatedAt, err)
	}
}

const ollamaChatBody = `{"model":"echo","messages":[{"role":"user","content":"hello brave new world"}]}`

// TestOllamaChatStream: Ollama streams by default; each delta is a line
// with done false, in order, and the last line carries done, done_reason
// and the metrics.
func TestOllamaChatStream(t *testing.T) {
	f := newOllamaFixture(t, Config{})
	r := f.do(t, "POST", "/api/chat", ollamaChatBody)
	if r.status != 200 || r.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("status %d Content-Type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	lines := ollamaLines(t, r.body)
	want := []string{"hello", " brave", " new", " world"}
	if len(lines) != len(want)+1 {
		t.Fatalf("got %d lines, want %d: %s", len(lines), len(want)+1, r.body)
	}
	for i, w := range want {
		l := lines[i]
		if l.Done || l.Model != "echo" || l.Message == nil || l.Message.Role != "assistant" || l.Message.Content != w || l.TotalDuration != nil {
			t.Errorf("line %d: %+v, want a not-done assistant delta %q without metrics", i, l, w)
		}
	}
	last := lines[len(lines)-1]
	if last.Message == nil || last.Message.Content != "" {
		t.Errorf("final line message %+v, want an empty assistant message", last.Message)
	}
	checkFinal(t, last, "stop", 4, 4)
}

// TestOllamaChatAggregate: stream:false gives one object with the whole
// message and the metrics.
func TestOllamaChatAggregate(t *testing.T) {
	f := newOllamaFixture(t, Config{})
	r := f.do(t, "POST", "/api/chat", `{"model":"echo","stream":false,"think":true,"messages":[{"role":"system","content":"be kind"},{"role":"user","content":"hello brave new world"}]}`)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d Content-Type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	lines := ollamaLines(t, r.body)
	if len(lines) != 1 {
		t.Fatalf("got %d objects, want 1: %s", len(lines), r.body)
	}
	l := lines[0]
	if l.Message == nil || l.Message.Content != "hello brave new world" || l.Message.Thinking != "thinking" {
		t.Errorf("message %+v, want the echo and the reasoning in thinking", l.Message)
	}
	checkFinal(t, l, "stop", 6, 4)
	f.b.mu.Lock()
	kw := f.b.lastReq.TemplateKwargs
	f.b.mu.Unlock()
	if kw["enable_thinking"] != true {
		t.Errorf("think:true reached the backend as template kwargs %v", kw)
	}
}

// TestOllamaRequestMapping: options, format and think reach the backend as
// the normalized request.
func TestOllamaRequestMapping(t *testing.T) {
	f := newOllamaFixture(t, Config{})
	body := `{"model":"echo","stream":false,"format":"json","think":"high","keep_alive":"5m",
		"messages":[{"role":"user","content":"a b c"}],
		"options":{"temperature":0.2,"top_p":0.8,"top_k":20,"min_p":0.1,"seed":7,"num_predict":2,"stop":["\n"],
			"repeat_penalty":1.2,"presence_penalty":0.3,"frequency_penalty":0.4,"repeat_last_n":64,"num_ctx":2048,"num_thread":4}}`
	r := f.do(t, "POST", "/api/chat", body)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	l := ollamaLines(t, r.body)[0]
	if l.Message.Content != "a b" || l.DoneReason != "length" {
		t.Errorf("num_predict 2: content %q done_reason %q, want \"a b\" length", l.Message.Content, l.DoneReason)
	}
	f.b.mu.Lock()
	got := f.b.lastReq
	f.b.mu.Unlock()
	seed := uint64(7)
	temp, topP := 0.2, 0.8
	window := 64
	want := request.Sampling{MaxTokens: 2, Temperature: &temp, TopP: &topP, TopK: 20, MinP: 0.1, Seed: &seed, Stop: []string{"\n"},
		RepeatPenalty: 1.2, PresencePenalty: 0.3, FrequencyPenalty: 0.4, RepeatLastN: &window}
	gs, _ := json.Marshal(got.Sampling)
	ws, _ := json.Marshal(want)
	if string(gs) != string(ws) {
		t.Errorf("sampling\n got %s\nwant %s", gs, ws)
	}
	if string(got.JSONSchema) != `{}` {
		t.Errorf("format json reached the backend as JSONSchema %q, want {}", got.JSONSchema)
	}
	if got.TemplateKwargs["enable_thinking"] != true || got.TemplateKwargs["reasoning_effort"] != "high" {
		t.Errorf("think \"high\" reached the backend as %v", got.TemplateKwargs)
	}
}

// TestOllamaTools: a tool call comes back with its arguments as an object.
func TestOllamaTools(t *testing.T) {
	f := newOllamaFixture(t, Config{})
	body := `{"model":"echo","stream":false,"messages":[{"role":"user","content":"weather in Paris"}],
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	r := f.do(t, "POST", "/api/chat", body)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	l := ollamaLines(t, r.body)[0]
	if l.Message == nil || len(l.Message.ToolCalls) != 1 {
		t.Fatalf("message %s, want one tool call", r.body)
	}
	fn := l.Message.ToolCalls[0].Function
	if fn.Name != "get_weather" || string(fn.Arguments) != `{"echo":"weather in Paris"}` {
		t.Errorf("tool call %s %s", fn.Name, fn.Arguments)
	}
	if l.DoneReason != "stop" {
		t.Errorf("done_reason %q, want stop", l.DoneReason)
	}
}

// TestOllamaGenerate: the prompt becomes a user message (raw: the prompt
// as is), and the answer's text is in response.
func TestOllamaGenerate(t *testing.T) {
	f := newOllamaFixture(t, Config{})
	r := f.do(t, "POST", "/api/generate", `{"model":"echo","prompt":"once upon a time","system":"tell stories"}`)
	if r.status != 200 || r.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("status %d Content-Type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	lines := ollamaLines(t, r.body)
	var text strings.Builder
	for _, l := range lines[:len(lines)-1] {
		if l.Done || l.Response == nil || l.Message != nil {
			t.Errorf("line %+v, want a not-done response delta", l)
		} else {
			text.WriteString(*l.Response)
		}
	}
	if text.String() != "once upon a time" {
		t.Errorf("streamed response %q", text.String())
	}
	checkFinal(t, lines[len(lines)-1], "stop", 6, 4)
	f.b.mu.Lock()
	req := f.b.lastReq
	f.b.mu.Unlock()
	if !req.Chat || len(req.Messages) != 2 || req.Messages[0].Role != request.RoleSystem || req.Messages[1].Content != "once upon a time" {
		t.Errorf("generate reached the backend as %+v, want system + user messages", req)
	}

	r = f.do(t, "POST", "/api/generate", `{"model":"echo","prompt":"raw text here","raw":true,"stream":false}`)
	if r.status != 200 {
		t.Fatalf("raw: status %d: %s", r.status, r.body)
	}
	l := ollamaLines(t, r.body)[0]
	if l.Response == nil || *l.Response != "raw text here" {
		t.Errorf("raw: %s", r.body)
	}
	checkFinal(t, l, "stop", 3, 3)
	f.b.mu.Lock()
	req = f.b.lastReq
	f.b.mu.Unlock()
	if req.Chat || req.Prompt != "raw text here" {
		t.Errorf("raw generate reached the backend as %+v, want a raw prompt", req)
	}
}

// TestOllamaLoad: an empty conversation is Ollama's "load the model": done
// with done_reason load for a ready model (unload with keep_alive 0), 404
// otherwise; nothing runs.
func TestOllamaLoad(t *testing.T) {
	f := newOllamaFixture(t, Config{})
	for _, tt := range []struct{ path, body, reason string }{
		{"/api/chat", `{"model":"echo","messages":[]}`, "load"},
		{"/api/chat", `{"model":"echo","keep_alive":0}`, "unload"},
		{"/api/generate", `{"model":"echo","keep_alive":"0s"}`, "unload"},
		{"/api/generate", `{"model":"echo"}`, "load"},
	} {
		r := f.do(t, "POST", tt.path, tt.body)
		if r.status != 200 {
			t.Fatalf("%s %s: status %d: %s", tt.path, tt.body, r.status, r.body)
		}
		l := ollamaLines(t, r.body)
		if len(l) != 1 || !l[0].Done || l[0].DoneReason != tt.reason || l[0].Model != "echo" {
			t.Errorf("%s %s: %s, want one done line with done_reason %s", tt.path, tt.body, r.body, tt.reason)
		}
	}
	f.b.mu.Lock()
	ran := f.b.lastReq.Model
	f.b.mu.Unlock()
	if ran != "" {
		t.Errorf("a load request started a task for %q", ran)
	}
	wantOllamaError(t, f.do(t, "POST", "/api/chat", `{"model":"catalog-only"}`), 404, "model 'catalog-only' not found")
}

// TestOllamaErrors: every refusal under /api/ is {"error": "..."} with the
// class's status.
func TestOllamaErrors(t *testing.T) {
	f := newOllamaFixture(t, Config{MaxBodyBytes: 1 << 10})
	tests := []struct {
		name, method, path, body string
		status                   int
		inMessage                string
	}{
		{"unknown_model_chat", "POST", "/api/chat", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "model 'nope' not found: model \"nope\" has no ready instance"},
		{"unknown_model_generate", "POST", "/api/generate", `{"model":"nope","prompt":"x","stream":false}`, 404, "model 'nope' not found"},
		{"bad_json", "POST", "/api/chat", `{"model":`, 400, "not valid JSON"},
		{"empty_body", "POST", "/api/generate", ``, 400, "body is empty"},
		{"bad_option", "POST", "/api/chat", `{"model":"echo","messages":[{"role":"user","content":"x"}],"options":{"temperature":5}}`, 400, "options.temperature must be between 0 and 2"},
		{"images", "POST", "/api/chat", `{"model":"echo","messages":[{"role":"user","content":"x","images":["aGk="]}]}`, 400, "images are not supported"},
		{"template", "POST", "/api/generate", `{"model":"echo","prompt":"x","template":"{{ .Prompt }}"}`, 400, "template overrides are not supported"},
		{"too_large", "POST", "/api/chat", `{"model":"echo","messages":[{"role":"user","content":"` + strings.Repeat("x", 2<<10) + `"}]}`, 413, "larger than the limit"},
		{"fails_at_once_streamed", "POST", "/api/chat", `{"model":"fail-first","messages":[{"role":"user","content":"x"}]}`, 503, "loading"},
		{"fails_at_once_whole", "POST", "/api/generate", `{"model":"fail-first","prompt":"x","stream":false}`, 503, "loading"},
		{"fails_later_whole", "POST", "/api/chat", `{"model":"fail-after","stream":false,"messages":[{"role":"user","content":"x"}]}`, 500, "runner crashed"},
		{"wrong_method", "GET", "/api/chat", ``, 405, "method GET is not allowed on /api/chat; allowed: POST"},
		{"pull", "POST", "/api/pull", `{"model":"llama3"}`, 501, "/api/pull is not supported"},
		{"blobs", "HEAD", "/api/blobs/sha256:abc", ``, 501, ""},
		{"unknown_route", "POST", "/api/nothing", `{}`, 404, "no route for POST /api/nothing"},
		{"show_unknown", "POST", "/api/show", `{"model":"nope"}`, 404, "model 'nope' not found"},
		{"show_no_model", "POST", "/api/show", `{}`, 400, "model is required"},
		{"embed_bad", "POST", "/api/embed", `{"model":"echo"}`, 400, "input is required"},
		{"embed_unknown_model", "POST", "/api/embed", `{"model":"nope","input":"x"}`, 404, "model 'nope' not found: model \"nope\" has no ready instance"},
		{"embed_not_an_embedder", "POST", "/api/embed", `{"model":"org/other","input":"x"}`, 400, "does not produce embeddings"},
		{"embed_wrong_dimensions", "POST", "/api/embed", `{"model":"echo","input":"x","dimensions":3}`, 400, "2 dimensions, not 3"},
		{"embed_load_unknown", "POST", "/api/embed", `{"model":"catalog-only","input":[]}`, 404, "model 'catalog-only' not found"},
		{"embeddings_no_prompt", "POST", "/api/embeddings", `{"model":"echo"}`, 400, "prompt is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, tt.method, tt.path, tt.body)
			if tt.method == "HEAD" {
				if r.status != tt.status {
					t.Fatalf("status %d, want %d", r.status, tt.status)
				}
				return
			}
			wantOllamaError(t, r, tt.status, tt.inMessage)
			if tt.status == 405 && r.header.Get("Allow") != "POST" {
				t.Errorf("Allow %q, want POST", r.header.Get("Allow"))
			}
		})
	}
}

// TestOllamaEmbed: /api/embed answers unit vectors, one per input, with
// the token count; /api/embeddings the legacy single raw vector; an empty
// input is the load idiom.
func TestOllamaEmbed(t *testing.T) {
	f := newOllamaFixture(t, Config{})
	tests := []struct{ name, path, body, want string }{
		{"embed", "/api/embed", `{"model":"echo","input":["three word input","x"],"truncate":true,"keep_alive":"1m"}`,
			`{"model":"echo","embeddings":[[0.18428855,0.98287225],[0.70710677,0.70710677]],"total_duration":1000000,"load_duration":0,"prompt_eval_count":4}`},
		{"embed_string", "/api/embed", `{"model":"echo","input":"ab"}`,
			`{"model":"echo","embeddings":[[0.4472136,0.8944272]],"total_duration":1000000,"load_duration":0,"prompt_eval_count":1}`},
		{"embed_load", "/api/embed", `{"model":"echo","input":""}`,
			`{"model":"echo","embeddings":[],"total_duration":1000000,"load_duration":0,"prompt_eval_count":0}`},
		{"embeddings", "/api/embeddings", `{"model":"echo","prompt":"two words"}`, `{"embedding":[2,9]}`},
		{"embeddings_empty", "/api/embeddings", `{"model":"echo","prompt":""}`, `{"embedding":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, "POST", tt.path, tt.body)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			// Compare as values: float formatting is not the point.
			var got, want any
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if !approxEqual(got, want) {
				t.Errorf("\n got %s\nwant %s", bytes.TrimSpace(r.body), tt.want)
			}
		})
	}

	// Without an embedding backend: 501, after the request is checked.
	f = newOllamaFixtureWith(t, Config{}, func(b fullBackend) fullBackend { return noEmbedBackend{b} })
	if _, ok := any(noEmbedBackend{}).(ollamaEmbedder); ok {
		t.Skip("every Backend embeds now; the 501 answer cannot happen")
	}
	wantOllamaError(t, f.do(t, "POST", "/api/embed", `{"model":"echo","input":"x"}`), 501, "embeddings are not available on this server")
	wantOllamaError(t, f.do(t, "POST", "/api/embeddings", `{"model":"echo","prompt":"x"}`), 501, "embeddings are not available on this server")
	wantOllamaError(t, f.do(t, "POST", "/api/embed", `{"model":"echo"}`), 400, "input is required")
}

// approxEqual compares decoded JSON values, numbers within 1e-6.
func approxEqual(a, b any) bool {
	switch a := a.(type) {
	case float64:
		bf, ok := b.(float64)
		return ok && math.Abs(a-bf) < 1e-6
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !approxEqual(a[i], bs[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if !approxEqual(v, bm[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// TestOllamaStreamErrors: a task that fails after its first line ends the
// stream with an {"error"} line; one that ends without a final chunk too.
func TestOllamaStreamErrors(t *testing.T) {
	f := newOllamaFixture(t, Config{})
	for _, tt := range []struct{ model, deltas, inError string }{
		{"fail-after", "ab", "runner crashed"},
		{"silent", "a", "without a final chunk"},
	} {
		r := f.do(t, "POST", "/api/chat", `{"model":"`+tt.model+`","messages":[{"role":"user","content":"x"}]}`)
		if r.status != 200 {
			t.Fatalf("%s: status %d: %s", tt.model, r.status, r.body)
		}
		lines := ollamaLines(t, r.body)
		var text string
		for _, l := range lines[:len(lines)-1] {
			text += l.Message.Content
		}
		last := lines[len(lines)-1]
		if text != tt.deltas || !strings.Contains(last.Error, tt.inError) || last.Done {
			t.Errorf("%s: %s, want deltas %q then an error line with %q", tt.model, r.body, tt.deltas, tt.inError)
		}
	}
}

// TestOllamaClientDisconnectCancelsTask: leaving a stream (or a whole
// answer) cancels the backend's context.
func TestOllamaClientDisconnectCancelsTask(t *testing.T) {
	f := newOllamaFixture(t, Config{})
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "streaming", false: "non_streaming"}[stream]
		t.Run(name, func(t *testing.T) {
			body := `{"model":"block","stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,"messages":[{"role":"user","content":"x"}]}`
			f.leaveAndWantCancelled(t, "/api/chat", body, stream, func(r io.Reader) error {
				// Read the first line, then leave.
				_, err := bufio.NewReader(r).ReadString('\n')
				return err
			})
		})
	}
}

// TestOllamaModelRoutes: tags, ps, show and version in Ollama's shapes,
// filled from the catalog and state documents.
func TestOllamaModelRoutes(t *testing.T) {
	f := newOllamaFixture(t, Config{})
	get := func(method, path, body string) map[string]any {
		t.Helper()
		r := f.do(t, method, path, body)
		if r.status != 200 {
			t.Fatalf("%s %s: status %d: %s", method, path, r.status, r.body)
		}
		var doc map[string]any
		if err := json.Unmarshal(r.body, &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	compact := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}

	tags := compact(get("GET", "/api/tags", ""))
	wantTags := `{"models":[` +
		`{"details":{"families":["llama"],"family":"llama","format":"gguf","parameter_size":"1B","parent_model":"","quantization_level":"Q8_0"},"model":"echo","modified_at":"2023-11-14T22:13:20Z","name":"echo","size":1321083072},` +
		`{"details":{"families":["qwen2"],"family":"qwen2","format":"gguf","parent_model":""},"model":"org/other","name":"org/other","size":1000}]}`
	if tags != wantTags {
		t.Errorf("tags\n got %s\nwant %s", tags, wantTags)
	}

	ps := compact(get("GET", "/api/ps", ""))
	wantPS := `{"models":[` +
		`{"context_length":8192,"details":{"families":["llama"],"family":"llama","format":"gguf","parameter_size":"1B","parent_model":"","quantization_level":"Q8_0"},"model":"echo","name":"echo","size":1321083072,"size_vram":0},` +
		`{"context_length":4096,"details":{"families":["qwen2"],"family":"qwen2","format":"gguf","parent_model":""},"model":"org/other","name":"org/other","size":1000,"size_vram":0}]}`
	if ps != wantPS {
		t.Errorf("ps\n got %s\nwant %s", ps, wantPS)
	}

	show := get("POST", "/api/show", `{"model":"echo"}`)
	if compact(show["capabilities"]) != `["completion","tools","thinking"]` || show["modified_at"] != "2023-11-14T22:13:20Z" {
		t.Errorf("show echo: %s", compact(show))
	}
	info, _ := show["model_info"].(map[string]any)
	if info["general.architecture"] != "llama" || info["llama.block_count"] != float64(16) || info["llama.context_length"] != float64(131072) {
		t.Errorf("show echo model_info: %s", compact(info))
	}
	// A catalog model that is not placed can still be shown; its card's
	// template override is its template.
	show = get("POST", "/api/show", `{"name":"catalog-only"}`)
	if show["template"] != "{{ messages }}" || show["modified_at"] != nil {
		t.Errorf("show catalog-only: %s", compact(show))
	}

	if v := get("GET", "/api/version", ""); v["version"] != ollama.Version || v["skulk_version"] != version.Version() || v["skulk_commit"] != version.Commit() {
		t.Errorf("version: %v", v)
	}
	if r := f.do(t, "HEAD", "/api/version", ""); r.status != 200 {
		t.Errorf("HEAD /api/version: %d", r.status)
	}
}

// TestOllamaAuth: with a key, /api/ routes require it like every route.
func TestOllamaAuth(t *testing.T) {
	f := newOllamaFixture(t, Config{APIKey: "k"})
	r := f.do(t, "GET", "/api/tags", "")
	if r.status != 200 {
		t.Fatalf("with the key: %d %s", r.status, r.body)
	}
	f.key = ""
	if r := f.do(t, "GET", "/api/tags", ""); r.status != 401 {
		t.Errorf("without the key: %d %s", r.status, r.body)
	}
}

// TestOllamaNodeClient runs the official ollama npm client (client.mjs)
// against the API with the test backend and a bearer key.
func TestOllamaNodeClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the ollama npm client check")
	}
	dir, node := testkit.NodeProject(t, "testdata/ollama-client", "client.mjs")
	const key = "ollama-node-client"
	f := newOllamaFixture(t, Config{APIKey: key})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out := runNodeScript(ctx, t, node, dir, "client.mjs", f.url, "echo", key)
	type final struct {
		Done             bool   `json:"done"`
		DoneReason       string `json:"done_reason"`
		TotalDuration    int64  `json:"total_duration"`
		LoadDuration     *int64 `json:"load_duration"`
		PromptEvalCount  int    `json:"prompt_eval_count"`
		EvalCount        int    `json:"eval_count"`
		EvalDurationSeen *int64 `json:"eval_duration"`
	}
	var got struct {
		Version string `json:"version"`
		Tags    []struct {
			Name    string `json:"name"`
			Details *struct {
				Family string `json:"family"`
			} `json:"details"`
		} `json:"tags"`
		Show struct {
			Details struct {
				Format string `json:"format"`
			} `json:"details"`
			ModelInfoKeys int `json:"model_info_keys"`
		} `json:"show"`
		PS []struct {
			Name          string `json:"name"`
			ContextLength int    `json:"context_length"`
		} `json:"ps"`
		Chat struct {
			Role, Content string
			final
		} `json:"chat"`
		ChatStream struct {
			Lines             int    `json:"lines"`
			Content           string `json:"content"`
			NotDoneBeforeLast bool   `json:"not_done_before_last"`
			Last              final  `json:"last"`
		} `json:"chat_stream"`
		Generate struct {
			Response string `json:"response"`
			final
		} `json:"generate"`
		GenerateStream struct {
			Lines    int    `json:"lines"`
			Response string `json:"response"`
			Last     final  `json:"last"`
		} `json:"generate_stream"`
		Embed struct {
			Status int `json:"status"`
			Count  int `json:"count"`
			Dims   int `json:"dims"`
		} `json:"embed"`
		NotFound struct {
			Status int    `json:"status"`
			Error  string `json:"error"`
		} `json:"not_found"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %s: %v", out, err)
	}
	t.Logf("client view: %s", out)
	const text = "hello brave new world"
	okFinal := func(f final) bool {
		return f.Done && f.DoneReason == "stop" && f.TotalDuration > 0 && f.LoadDuration != nil &&
			f.PromptEvalCount == 4 && f.EvalCount == 4 && f.EvalDurationSeen != nil
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"version", got.Version == "0.12.0"},
		{"tags", len(got.Tags) == 2 && got.Tags[0].Name == "echo" && got.Tags[0].Details != nil && got.Tags[0].Details.Family == "llama"},
		{"show", got.Show.Details.Format == "gguf" && got.Show.ModelInfoKeys > 1},
		{"ps", len(got.PS) == 2 && got.PS[0].Name == "echo" && got.PS[0].ContextLength == 8192},
		{"chat", got.Chat.Role == "assistant" && got.Chat.Content == text && okFinal(got.Chat.final)},
		{"chat_stream", got.ChatStream.Lines == 5 && got.ChatStream.Content == text && got.ChatStream.NotDoneBeforeLast && okFinal(got.ChatStream.Last)},
		{"generate", got.Generate.Response == text && okFinal(got.Generate.final)},
		{"generate_stream", got.GenerateStream.Lines == 5 && got.GenerateStream.Response == text && okFinal(got.GenerateStream.Last)},
		{"embed", got.Embed.Status == 200 && got.Embed.Count == 2 && got.Embed.Dims == 2},
		{"not_found", got.NotFound.Status == 404 && strings.Contains(got.NotFound.Error, "not found")},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: unexpected client view: %s", c.name, out)
		}
	}
}
