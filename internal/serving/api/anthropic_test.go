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
	"testing"
	"time"

	"github.com/skulk/skulk/internal/serving/api/anthropic"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/testkit"
)

const messagesBody = `{"model":"echo","max_tokens":64,"messages":[{"role":"user","content":"hello brave new world"}]}`

// anthropicErrorDoc is Anthropic's error document.
type anthropicErrorDoc struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantAnthropicError checks an Anthropic-shaped error answer (exactly the
// fields of the shape, nothing else) and returns it.
func wantAnthropicError(t *testing.T, r response, status int, typ, inMessage string) anthropicErrorDoc {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var doc anthropicErrorDoc
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil || doc.Type != "error" {
		t.Fatalf("error body %s is not Anthropic's error shape: %v", r.body, err)
	}
	if doc.Error.Type != typ {
		t.Errorf("error type %q, want %q", doc.Error.Type, typ)
	}
	if !strings.Contains(doc.Error.Message, inMessage) {
		t.Errorf("error message %q does not contain %q", doc.Error.Message, inMessage)
	}
	return doc
}

func TestMessagesNonStreaming(t *testing.T) {
	f := newFixture(t, Config{})
	const head = `{"id":"msg_test","type":"message","role":"assistant","model":"echo","content":`
	tests := []struct {
		name, body, want string
	}{
		{"text", messagesBody,
			head + `[{"type":"text","text":"hello brave new world"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":4,"output_tokens":4}}`},
		{"max_tokens_and_thinking", `{"model":"echo","max_tokens":2,"thinking":{"type":"enabled","budget_tokens":1},"system":"be brief","messages":[{"role":"user","content":[{"type":"text","text":"hello brave new world"}]}]}`,
			head + `[{"type":"thinking","thinking":"thinking","signature":""},{"type":"text","text":"hello brave"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":6,"output_tokens":2}}`},
		{"tool_use", `{"model":"echo","max_tokens":64,"tools":[{"name":"say","description":"Say it","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi there"}]}`,
			head + `[{"type":"tool_use","id":"toolu_test_0","name":"say","input":{"echo":"hi there"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":2,"output_tokens":1}}`},
		{"tool_result_follow_up", `{"model":"echo","max_tokens":64,"tools":[{"name":"say","input_schema":{"type":"object"}}],"tool_choice":{"type":"none"},"messages":[
			{"role":"user","content":"hi there"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_test_0","name":"say","input":{"echo":"hi there"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_test_0","content":[{"type":"text","text":"said it"}]}]}]}`,
			head + `[{"type":"text","text":"said it"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":4,"output_tokens":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, "POST", "/v1/messages", tt.body)
			if r.status != 200 || r.header.Get("Content-Type") != "application/json" || strings.TrimSpace(string(r.body)) != tt.want {
				t.Fatalf("%d %s\n got %s\nwant %s", r.status, r.header.Get("Content-Type"), r.body, tt.want)
			}
		})
	}
	t.Run("backend_sees_the_translation", func(t *testing.T) {
		f.do(t, "POST", "/v1/messages", `{"model":"echo","max_tokens":7,"temperature":0.25,"top_k":5,"stop_sequences":["END"],"metadata":{"user_id":"u"},"messages":[{"role":"user","content":"x"}]}`)
		f.b.mu.Lock()
		got := f.b.lastReq
		f.b.mu.Unlock()
		s := got.Sampling
		if s.MaxTokens != 7 || s.Temperature == nil || *s.Temperature != 0.25 || s.TopK != 5 || len(s.Stop) != 1 || s.Stop[0] != "END" || got.CountOnly {
			t.Fatalf("backend got %+v", got)
		}
	})
}

// readNamedEvents reads an SSE body into "name data" lines, checking that
// every event has exactly one event line followed by one data line.
func readNamedEvents(t *testing.T, body io.Reader) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if name != "" {
				t.Fatalf("event %q has no data line", name)
			}
		case strings.HasPrefix(line, "event: "):
			if name != "" {
				t.Fatalf("two event lines: %q", line)
			}
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if name == "" {
				t.Fatalf("data line without an event line: %q", line)
			}
			events = append(events, name+" "+strings.TrimPrefix(line, "data: "))
			name = ""
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

func TestMessagesStreaming(t *testing.T) {
	f := newFixture(t, Config{})
	start := func(model string) string {
		return `message_start {"type":"message_start","message":{"id":"msg_test","type":"message","role":"assistant","model":"` + model + `","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`
	}
	const ping = `ping {"type":"ping"}`
	const stop = `message_stop {"type":"message_stop"}`
	tests := []struct {
		name, body string
		want       []string
	}{
		{"text", `{"model":"echo","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hello brave world"}]}`, []string{
			start("echo"), ping,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" brave"}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}`,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			`message_delta {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":3,"output_tokens":3}}`,
			stop,
		}},
		{"thinking_and_max_tokens", `{"model":"echo","max_tokens":1,"stream":true,"thinking":{"type":"adaptive"},"messages":[{"role":"user","content":"hello brave"}]}`, []string{
			start("echo"), ping,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"thinking"}}`,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"hello"}}`,
			`content_block_stop {"type":"content_block_stop","index":1}`,
			`message_delta {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":2,"output_tokens":1}}`,
			stop,
		}},
		{"thinking_and_tool_use", `{"model":"echo","max_tokens":64,"stream":true,"thinking":{"type":"enabled","budget_tokens":8},"tools":[{"name":"say","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`, []string{
			start("echo"), ping,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"thinking"}}`,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_test_0","name":"say","input":{}}}`,
			`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"echo\":\"hi\"}"}}`,
			`content_block_stop {"type":"content_block_stop","index":1}`,
			`message_delta {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":1,"output_tokens":1}}`,
			stop,
		}},
		{"error_after_start", `{"model":"fail-after","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"x"}]}`, []string{
			start("fail-after"), ping,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"b"}}`,
			`error {"type":"error","error":{"type":"api_error","message":"runner crashed"}}`,
		}},
		{"silent_end_after_start", `{"model":"silent","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"x"}]}`, []string{
			start("silent"), ping,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`,
			`error {"type":"error","error":{"type":"api_error","message":"the task ended without a final chunk"}}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readNamedEvents(t, f.openEventStream(t, "/v1/messages", tt.body))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	t.Run("error_before_start_is_a_json_response", func(t *testing.T) {
		wantAnthropicError(t, f.do(t, "POST", "/v1/messages", `{"model":"fail-first","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"x"}]}`), 503, "overloaded_error", "loading")
		wantAnthropicError(t, f.do(t, "POST", "/v1/messages", `{"model":"nowhere","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"x"}]}`), 404, "not_found_error", "place_instance")
	})
}

func TestMessagesErrors(t *testing.T) {
	f := newFixture(t, Config{MaxBodyBytes: 1024})
	big := `{"model":"echo","max_tokens":9,"messages":[{"role":"user","content":"` + strings.Repeat("x", 2048) + `"}]}`
	tests := []struct {
		name, method, path, body string
		status                   int
		typ, inMessage           string
	}{
		{"missing_max_tokens", "POST", "/v1/messages", `{"model":"echo","messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "max_tokens is required"},
		{"max_tokens_wrong_type", "POST", "/v1/messages", `{"model":"echo","max_tokens":"9","messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "max_tokens"},
		{"messages_wrong_type", "POST", "/v1/messages", `{"model":"echo","max_tokens":9,"messages":"x"}`, 400, "invalid_request_error", "messages"},
		{"temperature_out_of_range", "POST", "/v1/messages", `{"model":"echo","max_tokens":9,"temperature":2,"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "between 0 and 1"},
		{"image_refused", "POST", "/v1/messages", `{"model":"echo","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"http://x"}}]}]}`, 400, "invalid_request_error", "text models"},
		{"server_tool_refused", "POST", "/v1/messages", `{"model":"echo","max_tokens":9,"tools":[{"type":"bash_20250124","name":"bash"}],"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "server tool"},
		{"unsupported_tool_choice", "POST", "/v1/messages", `{"model":"echo","max_tokens":9,"tool_choice":{"type":"sometimes"},"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "sometimes"},
		{"malformed_json", "POST", "/v1/messages", `{"model":`, 400, "invalid_request_error", "not valid JSON"},
		{"empty_body", "POST", "/v1/messages/count_tokens", ``, 400, "invalid_request_error", "empty"},
		{"body_too_large", "POST", "/v1/messages", big, 413, "request_too_large", "limit of 1024 bytes"},
		{"count_body_too_large", "POST", "/v1/messages/count_tokens", big, 413, "request_too_large", "limit"},
		{"unknown_model", "POST", "/v1/messages", `{"model":"llama-9000","max_tokens":9,"messages":[{"role":"user","content":"x"}]}`, 404, "not_found_error", "POST /place_instance"},
		{"count_unknown_model", "POST", "/v1/messages/count_tokens", `{"model":"llama-9000","messages":[{"role":"user","content":"x"}]}`, 404, "not_found_error", "place it"},
		{"unavailable", "POST", "/v1/messages", `{"model":"fail-first","max_tokens":9,"messages":[{"role":"user","content":"x"}]}`, 503, "overloaded_error", "loading"},
		{"error_chunk_after_output", "POST", "/v1/messages", `{"model":"fail-after","max_tokens":9,"messages":[{"role":"user","content":"x"}]}`, 500, "api_error", "runner crashed"},
		{"silent_task", "POST", "/v1/messages", `{"model":"silent","max_tokens":9,"messages":[{"role":"user","content":"x"}]}`, 500, "api_error", "without a final chunk"},
		{"count_unavailable", "POST", "/v1/messages/count_tokens", `{"model":"fail-first","messages":[{"role":"user","content":"x"}]}`, 503, "overloaded_error", "loading"},
		{"panic", "POST", "/v1/messages", `{"model":"panic","max_tokens":9,"messages":[{"role":"user","content":"x"}]}`, 500, "api_error", "internal error"},
		{"get_messages", "GET", "/v1/messages", ``, 405, "invalid_request_error", "allowed: POST"},
		{"get_count_tokens", "GET", "/v1/messages/count_tokens", ``, 405, "invalid_request_error", "allowed: POST"},
		{"batches_not_served", "POST", "/v1/messages/batches", `{}`, 404, "not_found_error", "/v1/messages/batches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, tt.method, tt.path, tt.body)
			wantAnthropicError(t, r, tt.status, tt.typ, tt.inMessage)
			if tt.status == 405 && r.header.Get("Allow") != "POST" {
				t.Errorf("Allow %q, want POST", r.header.Get("Allow"))
			}
		})
	}
	if !strings.Contains(f.log.String(), "test backend: panic model") {
		t.Error("the panic is missing from the log")
	}
}

func TestCountTokens(t *testing.T) {
	f := newFixture(t, Config{})
	r := f.do(t, "POST", "/v1/messages/count_tokens", `{"model":"echo","system":[{"type":"text","text":"be brief"}],"tools":[{"name":"say","input_schema":{}}],"messages":[{"role":"user","content":"hello brave new world"}]}`)
	if r.status != 200 || strings.TrimSpace(string(r.body)) != `{"input_tokens":6}` {
		t.Fatalf("%d %s", r.status, r.body)
	}
	f.b.mu.Lock()
	got := f.b.lastReq
	f.b.mu.Unlock()
	if !got.CountOnly || len(got.Messages) != 2 || got.Messages[0].Role != request.RoleSystem || len(got.Tools) != 1 {
		t.Fatalf("backend got %+v, want a CountOnly chat request with the system prompt and the tools", got)
	}
}

// TestMessagesClientDisconnectCancelsTask shows that a client going away
// cancels the context the Backend was given, for both answer modes.
func TestMessagesClientDisconnectCancelsTask(t *testing.T) {
	f := newFixture(t, Config{})
	for _, stream := range []bool{true, false} {
		name := "non_streaming"
		if stream {
			name = "streaming"
		}
		t.Run(name, func(t *testing.T) {
			body := `{"model":"block","max_tokens":9,"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,"messages":[{"role":"user","content":"x"}]}`
			f.leaveAndWantCancelled(t, "/v1/messages", body, stream, func(r io.Reader) error {
				// Read up to the first text delta, then leave.
				rd := bufio.NewReader(r)
				for {
					line, err := rd.ReadString('\n')
					if err != nil || strings.Contains(line, "text_delta") {
						return err
					}
				}
			})
		})
	}
}

// lateBackend adds to the test backend a model "late" that sends nothing
// until its context ends (a long prompt evaluation), then reports the
// cancellation on cancelled.
type lateBackend struct{ *testBackend }

func (b lateBackend) Generate(ctx context.Context, req request.Request) (<-chan request.Chunk, error) {
	if req.Model != "late" {
		return b.testBackend.Generate(ctx, req)
	}
	ch := make(chan request.Chunk)
	b.wg.Go(func() {
		defer close(ch)
		<-ctx.Done()
		b.cancelled <- ctx.Err()
	})
	return ch, nil
}

// TestMessagesPings runs streamMessage with a short ping interval: a task
// silent from the start still opens the stream (message_start, ping) and
// gets pings; a task silent after its first delta gets pings between its
// events; and leaving cancels the task.
func TestMessagesPings(t *testing.T) {
	b := lateBackend{newTestBackend(t)}
	s := &server{cfg: Config{}, inference: b, log: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		model := r.URL.Query().Get("model")
		chunks, err := b.Generate(ctx, request.Request{Model: model, Chat: true, Messages: []request.Message{{Role: request.RoleUser, Content: "x"}}})
		if err != nil {
			t.Error(err)
			return
		}
		s.streamMessage(ctx, w, r, chunks, anthropic.NewStream(anthropic.Meta{ID: "msg_p", Model: model}), 20*time.Millisecond)
	}))
	t.Cleanup(srv.Close)
	for _, tt := range []struct {
		model string
		want  []string // the event names before the pings that follow
	}{
		{"late", []string{"message_start", "ping"}},
		{"block", []string{"message_start", "ping", "content_block_start", "content_block_delta"}},
	} {
		t.Run(tt.model, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"?model="+tt.model, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
			}
			rd := bufio.NewReader(resp.Body)
			var names []string
			for len(names) < len(tt.want)+2 {
				line, err := rd.ReadString('\n')
				if err != nil {
					t.Fatalf("after %v: %v", names, err)
				}
				if name, ok := strings.CutPrefix(strings.TrimSpace(line), "event: "); ok {
					names = append(names, name)
				}
			}
			want := append(append([]string(nil), tt.want...), "ping", "ping")
			if strings.Join(names, " ") != strings.Join(want, " ") {
				t.Fatalf("events %v, want %v", names, want)
			}
			cancel()
			select {
			case err := <-b.cancelled:
				if err != context.Canceled {
					t.Fatalf("backend saw %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the backend's context was not cancelled after the client left")
			}
		})
	}
}

func TestAnthropicAuth(t *testing.T) {
	const key = "sk-ant-test-0123456789"
	f := newFixture(t, Config{APIKey: key})
	unauth := *f
	unauth.key = ""
	anthropicRoutes := []struct{ path, body string }{
		{"/v1/messages", messagesBody},
		{"/v1/messages/count_tokens", `{"model":"echo","messages":[{"role":"user","content":"x"}]}`},
	}
	for _, rt := range anthropicRoutes {
		for _, tc := range []struct {
			name   string
			header []string
			ok     bool
		}{
			{"missing", nil, false},
			{"x_api_key_wrong", []string{"x-api-key", "sk-wrong"}, false},
			{"x_api_key_prefix", []string{"x-api-key", "sk-ant-test"}, false},
			{"x_api_key_empty", []string{"x-api-key", " "}, false},
			{"bearer_wrong", []string{"Authorization", "Bearer sk-wrong"}, false},
			{"x_api_key_right", []string{"x-api-key", key}, true},
			{"x_api_key_canonical_case", []string{"X-Api-Key", key}, true},
			{"bearer_right", []string{"Authorization", "Bearer " + key}, true},
			{"wrong_bearer_right_x_api_key", []string{"Authorization", "Bearer sk-wrong", "x-api-key", key}, true},
		} {
			t.Run(strings.ReplaceAll(strings.TrimPrefix(rt.path, "/"), "/", "_")+"/"+tc.name, func(t *testing.T) {
				r := unauth.do(t, "POST", rt.path, rt.body, tc.header...)
				if !tc.ok {
					wantAnthropicError(t, r, http.StatusUnauthorized, "authentication_error", "key")
					return
				}
				if r.status != http.StatusOK {
					t.Fatalf("status %d with the right key; body %s", r.status, r.body)
				}
			})
		}
	}
	t.Run("x_api_key_on_every_route", func(t *testing.T) {
		for _, rt := range routes {
			r := unauth.do(t, rt.method, rt.path, rt.body, "x-api-key", key)
			if r.status != http.StatusOK {
				t.Errorf("%s %s: status %d with x-api-key; body %s", rt.method, rt.path, r.status, r.body)
			}
		}
	})
	t.Run("other_routes_keep_openai_shape", func(t *testing.T) {
		wantError(t, unauth.do(t, "POST", "/v1/chat/completions", chatBody, "x-api-key", "sk-wrong"), http.StatusUnauthorized, "authentication_error", "not valid")
	})
	if strings.Contains(f.log.String(), key) || strings.Contains(f.log.String(), "sk-wrong") {
		t.Fatal("a key reached the log")
	}
}

// anthropicClientDir is the Node project that runs the official
// @anthropic-ai/sdk client; the lead reuses its client.mjs against a live
// node.
const anthropicClientDir = "testdata/anthropic-client"

// TestAnthropicNodeClient runs the official @anthropic-ai/sdk client
// against the API with the test backend and an API key: a message, a
// streamed message, a tool round trip, count_tokens, a 404 for an unknown
// model, and a request authenticated with x-api-key alone.
func TestAnthropicNodeClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the @anthropic-ai/sdk client check")
	}
	dir, node := testkit.NodeProject(t, anthropicClientDir, "client.mjs")
	const key = "sk-ant-node-client"
	f := newFixture(t, Config{APIKey: key})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out := runNodeScript(ctx, t, node, dir, "client.mjs", f.url, "echo", key)
	var got struct {
		Message struct {
			Type, Role, Text string
			StopReason       string `json:"stop_reason"`
			Usage            struct {
				Input  int `json:"input_tokens"`
				Output int `json:"output_tokens"`
			}
		}
		Stream struct {
			Events     map[string]int
			Text       string
			StopReason string `json:"stop_reason"`
			Usage      struct {
				Input  int `json:"input_tokens"`
				Output int `json:"output_tokens"`
			}
		}
		Tools struct {
			First struct {
				StopReason string `json:"stop_reason"`
				Name       string
				Input      map[string]any
				ToolUseID  string `json:"tool_use_id"`
			}
			Second struct {
				StopReason string `json:"stop_reason"`
				Text       string
			}
		}
		CountTokens struct {
			InputTokens int `json:"input_tokens"`
		} `json:"count_tokens"`
		NotFound struct {
			Status int
			Type   string
		} `json:"not_found"`
		XAPIKey struct {
			Status int
			Text   string
		} `json:"x_api_key"`
	}
	t.Logf("the client saw: %s", out)
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %s: %v", out, err)
	}
	const text = "hello brave new world"
	ev := got.Stream.Events
	checks := []struct {
		name string
		ok   bool
	}{
		{"message", got.Message.Type == "message" && got.Message.Role == "assistant" && got.Message.Text == text &&
			got.Message.StopReason == "end_turn" && got.Message.Usage.Input == 4 && got.Message.Usage.Output == 4},
		{"stream", got.Stream.Text == text && got.Stream.StopReason == "end_turn" && got.Stream.Usage.Input == 4 && got.Stream.Usage.Output == 4 &&
			ev["message_start"] == 1 && ev["content_block_start"] == 1 && ev["content_block_delta"] == 4 && ev["content_block_stop"] == 1 &&
			ev["message_delta"] == 1 && ev["message_stop"] == 1},
		{"tool_use", got.Tools.First.StopReason == "tool_use" && got.Tools.First.Name == "get_weather" &&
			got.Tools.First.Input["echo"] == "What is the weather in Paris?" && strings.HasPrefix(got.Tools.First.ToolUseID, "toolu_")},
		{"tool_result", got.Tools.Second.StopReason == "end_turn" && got.Tools.Second.Text == "Sunny, 18 degrees Celsius."},
		{"count_tokens", got.CountTokens.InputTokens == 4},
		{"not_found", got.NotFound.Status == 404 && got.NotFound.Type == "not_found_error"},
		{"x_api_key", got.XAPIKey.Status == 200 && got.XAPIKey.Text == text},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: unexpected client view: %s", c.name, out)
		}
	}
}
