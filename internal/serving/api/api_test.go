package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
)

func placementRefusal(req request.PlaceRequest) error {
	return &placement.TopologyGapError{Model: string(req.ModelID), MinNodes: 2, Candidates: 1}
}

func excludedRefusal(req request.PlaceRequest) error {
	ex := make([]string, len(req.ExcludedNodes))
	for i, n := range req.ExcludedNodes {
		ex[i] = string(n)
	}
	return &placement.AllCandidatesExcludedError{Model: string(req.ModelID), Excluded: ex}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type fixture struct {
	url string
	b   *testBackend
	log *syncBuffer
	key string
}

// newFixture serves the API with a test backend on a loopback socket.
func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	b := newTestBackend(t)
	logs := &syncBuffer{}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Unix(1700000000, 0) }
	}
	if cfg.NewID == nil {
		cfg.NewID = func() string { return "test" }
	}
	srv := httptest.NewServer(New(cfg, every(b), slog.New(slog.NewTextHandler(logs, nil))))
	t.Cleanup(srv.Close) // runs before b.wg.Wait: the server's handlers end first
	return &fixture{url: srv.URL, b: b, log: logs, key: cfg.APIKey}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request (with the fixture's key, if any) and reads the whole
// answer.
func (f *fixture) do(t *testing.T, method, path, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if f.key != "" {
		req.Header.Set("Authorization", "Bearer "+f.key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

type errorDoc struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// wantError checks an OpenAI-shaped error answer and returns it.
func wantError(t *testing.T, r response, status int, typ, inMessage string) errorDoc {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var doc errorDoc
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("error body %s is not OpenAI's error shape: %v", r.body, err)
	}
	if doc.Error.Type != typ {
		t.Errorf("error type %q, want %q", doc.Error.Type, typ)
	}
	if !strings.Contains(doc.Error.Message, inMessage) {
		t.Errorf("error message %q does not contain %q", doc.Error.Message, inMessage)
	}
	return doc
}

const chatBody = `{"model":"echo","messages":[{"role":"user","content":"hello brave new world"}]}`

// routes lists every route with a request that succeeds against the test
// backend.
var routes = []struct{ method, path, body string }{
	{"POST", "/v1/chat/completions", chatBody},
	{"POST", "/v1/completions", `{"model":"echo","prompt":"once upon"}`},
	{"GET", "/v1/models", ""},
	{"GET", "/state", ""},
	{"POST", "/place_instance", `{"model_id":"echo"}`},
	{"GET", "/instance/previews?model_id=echo", ""},
	{"DELETE", "/instance/cmd-0001", ""},
	{"GET", "/models", ""},
}

func TestAuth(t *testing.T) {
	const key = "sk-test-0123456789"
	f := newFixture(t, Config{APIKey: key})
	for _, rt := range routes {
		for _, tc := range []struct {
			name   string
			header string
			ok     bool
		}{
			{"missing", "", false},
			{"wrong", "Bearer sk-wrong", false},
			{"prefix_of_key", "Bearer sk-test", false},
			{"wrong_scheme", "Basic " + key, false},
			{"empty_bearer", "Bearer ", false},
			{"right", "Bearer " + key, true},
			{"lowercase_scheme", "bearer " + key, true},
		} {
			t.Run(strings.TrimPrefix(rt.path, "/")+"/"+tc.name, func(t *testing.T) {
				unauth := *f
				unauth.key = ""
				var hdr []string
				if tc.header != "" {
					hdr = []string{"Authorization", tc.header}
				}
				r := unauth.do(t, rt.method, rt.path, rt.body, hdr...)
				if !tc.ok {
					wantError(t, r, http.StatusUnauthorized, "authentication_error", "key")
					if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
						t.Errorf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
					}
					return
				}
				if r.status != http.StatusOK {
					t.Fatalf("status %d with the right key; body %s", r.status, r.body)
				}
			})
		}
	}
	t.Run("unknown_route_needs_key_too", func(t *testing.T) {
		unauth := *f
		unauth.key = ""
		wantError(t, unauth.do(t, "GET", "/nope", ""), http.StatusUnauthorized, "authentication_error", "key")
	})
	if strings.Contains(f.log.String(), key) || strings.Contains(f.log.String(), "sk-wrong") {
		t.Fatal("a key reached the log")
	}
}

func TestRouting(t *testing.T) {
	f := newFixture(t, Config{})
	tests := []struct {
		name, method, path string
		status             int
		allow              string
	}{
		{"unknown_path", "GET", "/v2/whatever", http.StatusNotFound, ""},
		{"root", "GET", "/", http.StatusNotFound, ""},
		{"chat_get", "GET", "/v1/chat/completions", http.StatusMethodNotAllowed, "POST"},
		{"state_delete", "DELETE", "/state", http.StatusMethodNotAllowed, "GET, HEAD"},
		{"instance_get", "GET", "/instance/x", http.StatusMethodNotAllowed, "DELETE"},
		{"place_put", "PUT", "/place_instance", http.StatusMethodNotAllowed, "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, tt.method, tt.path, "")
			typ := "not_found_error"
			if tt.status == http.StatusMethodNotAllowed {
				typ = "invalid_request_error"
			}
			wantError(t, r, tt.status, typ, tt.path)
			if got := r.header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
	for _, rt := range routes {
		t.Run("ok"+strings.ReplaceAll(strings.Split(rt.path, "?")[0], "/", "_"), func(t *testing.T) {
			r := f.do(t, rt.method, rt.path, rt.body)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" || !json.Valid(r.body) {
				t.Fatalf("status %d, Content-Type %q, body %s", r.status, r.header.Get("Content-Type"), r.body)
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, Config{MaxBodyBytes: 1024})
	big := `{"model":"echo","messages":[{"role":"user","content":"` + strings.Repeat("x", 2048) + `"}]}`
	tests := []struct {
		name, path, body string
		status           int
		typ, inMessage   string
		param            string
	}{
		{"body_too_large", "/v1/chat/completions", big, 413, "invalid_request_error", "limit of 1024 bytes", ""},
		{"place_body_too_large", "/place_instance", `{"model_id":"` + strings.Repeat("m", 2048) + `"}`, 413, "invalid_request_error", "limit", ""},
		{"malformed_json", "/v1/chat/completions", `{"model":"echo",`, 400, "invalid_request_error", "not valid JSON", ""},
		{"empty_body", "/v1/completions", ``, 400, "invalid_request_error", "empty", ""},
		{"wrong_type", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"x"}],"temperature":"warm"}`, 400, "invalid_request_error", "temperature", "temperature"},
		{"n_two", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"x"}],"n":2}`, 400, "invalid_request_error", "n must be 1", "n"},
		{"absurd_max_tokens", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"x"}],"max_tokens":1000000000000}`, 400, "invalid_request_error", "max_tokens", "max_tokens"},
		{"image_part", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:"}}]}]}`, 400, "invalid_request_error", "text parts only", "messages[0].content"},
		{"unknown_model", "/v1/chat/completions", `{"model":"llama-9000","messages":[{"role":"user","content":"x"}]}`, 404, "not_found_error", "POST /place_instance", "model"},
		{"unknown_model_completions", "/v1/completions", `{"model":"llama-9000","prompt":"x"}`, 404, "not_found_error", "place it", "model"},
		{"place_unknown_field", "/place_instance", `{"model_id":"echo","min_node":2}`, 400, "invalid_request_error", "min_node", "min_node"},
		{"place_missing_model", "/place_instance", `{"min_nodes":2}`, 400, "invalid_request_error", "model_id is required", "model_id"},
		{"place_wrong_type", "/place_instance", `{"model_id":"echo","context_tokens":"big"}`, 400, "invalid_request_error", "context_tokens", "context_tokens"},
		{"place_bad_node", "/place_instance", `{"model_id":"echo","excluded_nodes":["a b"]}`, 400, "invalid_request_error", "excluded_nodes[0]", "excluded_nodes"},
		{"place_topology_gap", "/place_instance", `{"model_id":"too-big","min_nodes":2}`, 503, "service_unavailable_error", "needs at least 2 nodes", ""},
		{"place_all_excluded", "/place_instance", `{"model_id":"excluded","excluded_nodes":["n1"]}`, 400, "invalid_request_error", "exclude fewer", ""},
		{"place_internal_hides_cause", "/place_instance", `{"model_id":"broken"}`, 500, "server_error", "node's log", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := wantError(t, f.do(t, "POST", tt.path, tt.body), tt.status, tt.typ, tt.inMessage)
			if got := doc.Error.Param; (got == nil) != (tt.param == "") || (got != nil && *got != tt.param) {
				t.Errorf("param %v, want %q", got, tt.param)
			}
		})
	}
	if strings.Contains(f.do(t, "POST", "/place_instance", `{"model_id":"broken"}`).String(), "/var/lib/secret") {
		t.Error("an internal error's cause reached the client")
	}
	if !strings.Contains(f.log.String(), "/var/lib/secret") {
		t.Error("an internal error's cause is missing from the log")
	}
	for _, tt := range []struct{ name, path string }{
		{"previews_without_model", "/instance/previews"},
		{"previews_bad_model", "/instance/previews?model_id=a/../b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, f.do(t, "GET", tt.path, ""), 400, "invalid_request_error", "model_id")
		})
	}
	t.Run("delete_unknown_instance", func(t *testing.T) {
		wantError(t, f.do(t, "DELETE", "/instance/nope", ""), 404, "not_found_error", "nope")
	})
}

func (r response) String() string { return string(r.body) }

func TestControlRoutes(t *testing.T) {
	f := newFixture(t, Config{})
	r := f.do(t, "POST", "/place_instance", `{"model_id":"org/model","min_nodes":2,"context_tokens":8192,"excluded_nodes":["n1","n2"]}`, "Content-Type", "text/plain")
	if r.status != 200 || string(r.body) != `{"instance_id":"cmd-0001","command_id":"cmd-0001"}`+"\n" {
		t.Fatalf("place: %d %s", r.status, r.body)
	}
	f.b.mu.Lock()
	got := f.b.lastPlace
	f.b.mu.Unlock()
	if got.ModelID != "org/model" || got.MinNodes != 2 || got.ContextTokens != 8192 || len(got.ExcludedNodes) != 2 || got.ExcludedNodes[1] != "n2" {
		t.Fatalf("backend got %+v", got)
	}
	tests := []struct{ method, path, want string }{
		{"GET", "/state", `{"instances":{},"term":3}`},
		{"GET", "/models", `{"models":[{"id":"echo","placement":"ready"}]}`},
		{"GET", "/instance/previews?model_id=org/model", `[{"model_id":"org/model","nodes":1}]`},
		{"DELETE", "/instance/cmd-0001", `{"instance_id":"cmd-0001","instance_ids":["cmd-0001"]}`},
		{"GET", "/v1/models", `{"object":"list","data":[{"id":"echo","object":"model","created":1700000000,"owned_by":"skulk"},{"id":"org/other","object":"model","created":0,"owned_by":"org"}]}`},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(strings.Split(tt.path, "?")[0], "/", "_"), func(t *testing.T) {
			r := f.do(t, tt.method, tt.path, "")
			if r.status != 200 || strings.TrimSpace(string(r.body)) != tt.want {
				t.Fatalf("%d %s, want %s", r.status, r.body, tt.want)
			}
		})
	}
}

func TestChatNonStreaming(t *testing.T) {
	f := newFixture(t, Config{})
	tests := []struct {
		name, body, want string
	}{
		{"echo", chatBody, `{"id":"chatcmpl-test","object":"chat.completion","created":1700000000,"model":"echo","choices":[{"index":0,"message":{"role":"assistant","content":"hello brave new world"},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":4,"total_tokens":8}}`},
		{"length_and_reasoning", `{"model":"echo","max_tokens":2,"chat_template_kwargs":{"enable_thinking":true},"messages":[{"role":"user","content":"hello brave new world"}]}`,
			`{"id":"chatcmpl-test","object":"chat.completion","created":1700000000,"model":"echo","choices":[{"index":0,"message":{"role":"assistant","content":"hello brave","reasoning_content":"thinking"},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`},
		{"tool_call", `{"model":"echo","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"say"}}]}`,
			`{"id":"chatcmpl-test","object":"chat.completion","created":1700000000,"model":"echo","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"say","arguments":"{\"echo\":\"hi\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`},
		{"logprobs", `{"model":"echo","logprobs":true,"messages":[{"role":"user","content":"a b"}]}`,
			`{"id":"chatcmpl-test","object":"chat.completion","created":1700000000,"model":"echo","choices":[{"index":0,"message":{"role":"assistant","content":"a b"},"logprobs":{"content":[{"token":"a","logprob":-0.25,"bytes":[97],"top_logprobs":[]},{"token":" b","logprob":-0.5,"bytes":[32,98],"top_logprobs":[]}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}}`},
		{"completions", `{"model":"echo","prompt":["once upon a time"],"max_tokens":3}`,
			`{"id":"cmpl-test","object":"text_completion","created":1700000000,"model":"echo","choices":[{"text":"once upon a","index":0,"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":3,"total_tokens":7}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "/v1/chat/completions"
			if strings.Contains(tt.body, `"prompt"`) {
				path = "/v1/completions"
			}
			r := f.do(t, "POST", path, tt.body)
			if r.status != 200 || strings.TrimSpace(string(r.body)) != tt.want {
				t.Fatalf("%d\n got %s\nwant %s", r.status, r.body, tt.want)
			}
		})
	}
	t.Run("error_chunk_is_an_error_response", func(t *testing.T) {
		wantError(t, f.do(t, "POST", "/v1/chat/completions", `{"model":"fail-after","messages":[{"role":"user","content":"x"}]}`), 500, "server_error", "runner crashed")
		loading := f.do(t, "POST", "/v1/completions", `{"model":"fail-first","prompt":"x"}`)
		wantError(t, loading, 503, "service_unavailable_error", "loading")
		if ra := loading.header.Get("Retry-After"); ra != "1" {
			t.Errorf("a 503 while the model loads: Retry-After %q, want 1", ra)
		}
		wantError(t, f.do(t, "POST", "/v1/chat/completions", `{"model":"silent","messages":[{"role":"user","content":"x"}]}`), 500, "server_error", "without a final chunk")
	})
}

// readEvents reads an SSE body into its data payloads.
func readEvents(t *testing.T, body io.Reader) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	blank := true
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			blank = true
		case strings.HasPrefix(line, "data: "):
			if !blank {
				t.Fatalf("two data lines in one event: %q", line)
			}
			blank = false
			events = append(events, strings.TrimPrefix(line, "data: "))
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

func TestStreaming(t *testing.T) {
	f := newFixture(t, Config{})
	const chat = `{"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"echo","choices":`
	const text = `{"id":"cmpl-test","object":"text_completion","created":1700000000,"model":"echo","choices":`
	tests := []struct {
		name, path, body string
		want             []string
	}{
		{"chat_with_usage", "/v1/chat/completions", `{"model":"echo","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello brave world"}]}`, []string{
			chat + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
			chat + `[{"index":0,"delta":{"content":"hello"},"logprobs":null,"finish_reason":null}]}`,
			chat + `[{"index":0,"delta":{"content":" brave"},"logprobs":null,"finish_reason":null}]}`,
			chat + `[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}]}`,
			chat + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
			chat + `[],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`,
			`[DONE]`,
		}},
		{"chat_without_usage", "/v1/chat/completions", `{"model":"echo","stream":true,"max_tokens":1,"messages":[{"role":"user","content":"hello brave"}]}`, []string{
			chat + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
			chat + `[{"index":0,"delta":{"content":"hello"},"logprobs":null,"finish_reason":null}]}`,
			chat + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}`,
			`[DONE]`,
		}},
		{"completions_with_usage", "/v1/completions", `{"model":"echo","stream":true,"stream_options":{"include_usage":true},"prompt":"a b"}`, []string{
			text + `[{"text":"a","index":0,"logprobs":null,"finish_reason":null}]}`,
			text + `[{"text":" b","index":0,"logprobs":null,"finish_reason":null}]}`,
			text + `[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]}`,
			text + `[],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}}`,
			`[DONE]`,
		}},
		{"error_after_start", "/v1/chat/completions", `{"model":"fail-after","stream":true,"messages":[{"role":"user","content":"x"}]}`, []string{
			`{"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"fail-after","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
			`{"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"fail-after","choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]}`,
			`{"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"fail-after","choices":[{"index":0,"delta":{"content":"b"},"logprobs":null,"finish_reason":null}]}`,
			`{"error":{"message":"runner crashed","type":"server_error","param":null,"code":"internal_error"}}`,
		}},
		{"silent_end_after_start", "/v1/completions", `{"model":"silent","stream":true,"prompt":"x"}`, []string{
			`{"id":"cmpl-test","object":"text_completion","created":1700000000,"model":"silent","choices":[{"text":"a","index":0,"logprobs":null,"finish_reason":null}]}`,
			`{"error":{"message":"the task ended without a final chunk","type":"server_error","param":null,"code":"internal_error"}}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readEvents(t, f.openEventStream(t, tt.path, tt.body))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	t.Run("error_before_start_is_a_json_response", func(t *testing.T) {
		wantError(t, f.do(t, "POST", "/v1/chat/completions", `{"model":"fail-first","stream":true,"messages":[{"role":"user","content":"x"}]}`), 503, "service_unavailable_error", "loading")
		wantError(t, f.do(t, "POST", "/v1/chat/completions", `{"model":"nowhere","stream":true,"messages":[{"role":"user","content":"x"}]}`), 404, "not_found_error", "place_instance")
	})
}

// TestClientDisconnectCancelsTask shows that a client going away mid-stream
// cancels the context the Backend was given, for both answer modes.
func TestClientDisconnectCancelsTask(t *testing.T) {
	f := newFixture(t, Config{})
	for _, stream := range []bool{true, false} {
		name := "non_streaming"
		if stream {
			name = "streaming"
		}
		t.Run(name, func(t *testing.T) {
			body := `{"model":"block","stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,"messages":[{"role":"user","content":"x"}]}`
			f.leaveAndWantCancelled(t, "/v1/chat/completions", body, stream, func(r io.Reader) error {
				// Read the role event and the first delta, then leave.
				rd := bufio.NewReader(r)
				var err error
				for n := 0; n < 4 && err == nil; n++ {
					_, err = rd.ReadString('\n')
				}
				return err
			})
		})
	}
}

// openEventStream posts body to path, checks that the answer is a 200 event
// stream, and returns its body, which is closed when the test ends.
func (f *fixture) openEventStream(t *testing.T, path, body string) io.Reader {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	return resp.Body
}

// leaveAndWantCancelled posts body to path and leaves: a stream once
// readStart has read its start, a whole answer once the backend has the
// task (the answer never comes). It fails unless the backend's context is
// then cancelled, and clears the recorded model so the next call waits for
// its own task. The test backend's "block" model is the one to ask for.
func (f *fixture) leaveAndWantCancelled(t *testing.T, path, body string, stream bool, readStart func(io.Reader) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { // owned by this call: it waits on done below
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			if stream {
				err = readStart(resp.Body)
			}
			cancel()
			resp.Body.Close()
		}
		done <- err
	}()
	if !stream {
		waitFor(t, func() bool { return f.lastRequest().Model == "block" })
		cancel()
	}
	select {
	case err := <-f.b.cancelled:
		if err != context.Canceled {
			t.Fatalf("backend saw %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backend's context was not cancelled after the client left")
	}
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	f.b.mu.Lock()
	f.b.lastReq.Model = ""
	f.b.mu.Unlock()
}

// lastRequest returns the request the backend last received.
func (f *fixture) lastRequest() request.Request {
	f.b.mu.Lock()
	defer f.b.mu.Unlock()
	return f.b.lastReq
}

// waitFor polls cond (the one polling helper the house style allows),
// failing after 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPanicRecovery(t *testing.T) {
	f := newFixture(t, Config{})
	wantError(t, f.do(t, "POST", "/v1/chat/completions", `{"model":"panic","messages":[{"role":"user","content":"x"}]}`), 500, "server_error", "internal error")
	if !strings.Contains(f.log.String(), "test backend: panic model") || !strings.Contains(f.log.String(), "status=500") {
		t.Fatalf("the panic is not in the log:\n%s", f.log.String())
	}
	// The server is still serving.
	if r := f.do(t, "POST", "/v1/chat/completions", chatBody); r.status != 200 {
		t.Fatalf("after a panic: %d %s", r.status, r.body)
	}
}

func TestRequestLog(t *testing.T) {
	const key = "sk-log-check"
	f := newFixture(t, Config{APIKey: key})
	f.do(t, "POST", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"my secret prompt"}]}`)
	f.do(t, "GET", "/instance/previews?model_id=echo", "")
	logs := f.log.String()
	for _, want := range []string{"method=POST path=/v1/chat/completions status=200 duration=", "path=/instance/previews status=200"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	for _, leak := range []string{key, "secret prompt", "model_id=echo"} {
		if strings.Contains(logs, leak) {
			t.Errorf("log holds %q:\n%s", leak, logs)
		}
	}
}

func TestDecodePlaceRequest(t *testing.T) {
	got, err := DecodePlaceRequest([]byte(`{"model_id":"a/b","min_nodes":1,"context_tokens":4096,"excluded_nodes":["n-1"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := request.PlaceRequest{ModelID: "a/b", MinNodes: 1, ContextTokens: 4096, ExcludedNodes: []ids.NodeID{"n-1"}}
	if got.ModelID != want.ModelID || got.MinNodes != 1 || got.ContextTokens != 4096 || len(got.ExcludedNodes) != 1 || got.ExcludedNodes[0] != "n-1" {
		t.Fatalf("got %+v", got)
	}
	if got, err := DecodePlaceRequest([]byte(`{"model_id":"a/b","cache_type":"q4_0","speculative":"lookup","draft_model":"c/d"}`)); err != nil ||
		got.CacheType != "q4_0" || got.Speculative != "lookup" || got.DraftModel != "c/d" {
		t.Fatalf("cache_type and speculative settings: %+v, %v", got, err)
	}
	for _, body := range []string{``, `[]`, `{"model_id":"a"} {}`, `{"model_id":"a","min_nodes":-1}`, `{"model_id":"a","context_tokens":99999999999}`, `{"model_id":""}`, `{"model_id":"a","excluded_nodes":[""]}`, `{"model_id":"a","cache_type":"q5_1"}`, `{"model_id":"a","speculative":"medusa"}`, `{"model_id":"a","draft_model":"Bad Id"}`} {
		if _, err := DecodePlaceRequest([]byte(body)); err == nil {
			t.Errorf("accepted %s", body)
		}
	}
}

func FuzzDecodePlaceRequest(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"model_id":"a/b","min_nodes":2,"context_tokens":8192,"excluded_nodes":["x"]}`, `{"model_id":"a","extra":1}`, `{"model_id":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodePlaceRequest(body)
		if err != nil {
			return
		}
		if req.ModelID.Validate() != nil || req.MinNodes < 0 || req.ContextTokens < 0 || req.ContextTokens > MaxContextTokens || len(req.ExcludedNodes) > MaxExcludedNodes {
			t.Fatalf("accepted out-of-contract request %+v", req)
		}
	})
}

// TestPanicAfterResponseBegan shows that a panic once a stream has begun
// cuts the connection (the client sees a truncated body, never a 200 that
// looks complete) and is logged, and that the server keeps serving.
func TestPanicAfterResponseBegan(t *testing.T) {
	logs := &syncBuffer{}
	s := &server{cfg: Config{Now: time.Now}, log: slog.New(slog.NewTextHandler(logs, nil))}
	h := s.logRequests(s.recoverPanics(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {}\n\n"))
		_ = http.NewResponseController(w).Flush()
		if r.URL.Path == "/panic" {
			panic("mid-stream bug")
		}
	})))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/panic")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatal("the body ended cleanly after a panic mid-stream; want a cut connection")
	}
	if !strings.Contains(logs.String(), "mid-stream bug") {
		t.Fatalf("panic not logged:\n%s", logs.String())
	}
	resp, err = http.Get(srv.URL + "/fine")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("after the panic: %d", resp.StatusCode)
	}
}

// TestLoopbackOnlyWithoutKeys: with no key configured the API serves
// loopback clients and refuses every other address, in the wire format of
// the route, saying how to set a key or open the API.
func TestLoopbackOnlyWithoutKeys(t *testing.T) {
	h := New(Config{}, every(newTestBackend(t)), nil)
	for _, c := range []struct {
		path, body string
		shape      func(map[string]any) bool
	}{
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			func(d map[string]any) bool {
				e, ok := d["error"].(map[string]any)
				return ok && e["type"] == "permission_error"
			}},
		{"/v1/messages", `{"model":"m","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`,
			func(d map[string]any) bool {
				e, ok := d["error"].(map[string]any)
				return d["type"] == "error" && ok && e["type"] == "permission_error"
			}},
		{"/api/chat", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			func(d map[string]any) bool { _, ok := d["error"].(string); return ok }},
	} {
		for _, remote := range []string{"192.0.2.7:4000", "[2001:db8::1]:4000", "127.0.0.1:4000", "[::1]:4000"} {
			req := httptest.NewRequest("POST", c.path, strings.NewReader(c.body))
			req.RemoteAddr = remote
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			loopback := strings.HasPrefix(remote, "127.") || strings.HasPrefix(remote, "[::1]")
			if loopback {
				if w.Code == http.StatusForbidden || w.Code == http.StatusUnauthorized {
					t.Errorf("%s from %s: %d %s", c.path, remote, w.Code, w.Body)
				}
				continue
			}
			var doc map[string]any
			if w.Code != http.StatusForbidden || json.Unmarshal(w.Body.Bytes(), &doc) != nil || !c.shape(doc) ||
				!strings.Contains(w.Body.String(), "SKULK_API_KEY") || !strings.Contains(w.Body.String(), "--api-open") {
				t.Errorf("%s from %s: %d %s", c.path, remote, w.Code, w.Body)
			}
		}
	}
}

// TestWarningHeader checks that every route that changes something
// carries the node's warning while there is one, errors included, and that
// reads and quiet times carry none.
func TestWarningHeader(t *testing.T) {
	var mu sync.Mutex
	warning := ""
	f := newFixture(t, Config{Warning: func() string { mu.Lock(); defer mu.Unlock(); return warning }})
	set := func(w string) { mu.Lock(); warning = w; mu.Unlock() }
	const msg = "persistence degraded: node n1: the event log stopped writing"
	tests := []struct {
		name, method, path, body, warning string
		want                              string
	}{
		{"place_quiet", "POST", "/place_instance", `{"model_id":"echo"}`, "", ""},
		{"place", "POST", "/place_instance", `{"model_id":"echo"}`, msg, msg},
		{"place_refused", "POST", "/place_instance", `{"model_id":"nope"}`, msg, msg},
		{"delete", "DELETE", "/instance/cmd-0001", "", msg, msg},
		{"chat", "POST", "/v1/chat/completions", chatBody, msg, msg},
		{"state", "GET", "/state", "", msg, ""},
		{"models", "GET", "/models", "", msg, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set(tt.warning)
			r := f.do(t, tt.method, tt.path, tt.body)
			if got := r.header.Get(WarningHeader); got != tt.want {
				t.Fatalf("%s %s (%d): %s = %q, want %q", tt.method, tt.path, r.status, WarningHeader, got, tt.want)
			}
		})
	}
}
