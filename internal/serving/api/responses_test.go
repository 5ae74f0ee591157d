package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/serving/api/responses"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/testkit"
)

// newResponsesFixture serves the API with ids that differ per response, so
// the previous-response store sees distinct entries.
func newResponsesFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	var n atomic.Int64
	cfg.NewID = func() string { return fmt.Sprintf("t%d", n.Add(1)) }
	return newFixture(t, cfg)
}

// wireResponse is the part of a Response object the HTTP tests read.
type wireResponse struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	CreatedAt          int64   `json:"created_at"`
	Status             string  `json:"status"`
	Model              string  `json:"model"`
	PreviousResponseID *string `json:"previous_response_id"`
	IncompleteDetails  *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code, Message string
	} `json:"error"`
	Output []struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Annotations []any  `json:"annotations"`
		} `json:"content"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"output"`
	Usage *struct {
		Input  int `json:"input_tokens"`
		Output int `json:"output_tokens"`
		Total  int `json:"total_tokens"`
	} `json:"usage"`
}

// text joins the output_text of the message items.
func (r wireResponse) text() string {
	var sb strings.Builder
	for _, it := range r.Output {
		if it.Type == "message" {
			for _, c := range it.Content {
				sb.WriteString(c.Text)
			}
		}
	}
	return sb.String()
}

func decodeResponse(t *testing.T, r response) wireResponse {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d; body %s", r.status, r.body)
	}
	var w wireResponse
	if err := json.Unmarshal(r.body, &w); err != nil {
		t.Fatalf("response %s: %v", r.body, err)
	}
	return w
}

// sseEvent is one server-sent event: its name and its JSON payload.
type sseEvent struct {
	name string
	data map[string]json.RawMessage
	raw  string
}

func (e sseEvent) str(key string) string {
	var s string
	_ = json.Unmarshal(e.data[key], &s)
	return s
}

// parseSSE splits a streamed body into events, checking that each names
// its payload's type and that sequence numbers count from 0.
func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	for block := range strings.SplitSeq(strings.TrimSpace(string(body)), "\n\n") {
		var ev sseEvent
		for line := range strings.SplitSeq(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.raw = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected SSE line %q", line)
			}
		}
		if err := json.Unmarshal([]byte(ev.raw), &ev.data); err != nil {
			t.Fatalf("event data %q: %v", ev.raw, err)
		}
		if typ := ev.str("type"); typ != ev.name {
			t.Errorf("event %q carries type %q", ev.name, typ)
		}
		if seq := string(ev.data["sequence_number"]); seq != fmt.Sprint(len(out)) {
			t.Errorf("event %d (%s) has sequence_number %s", len(out), ev.name, seq)
		}
		out = append(out, ev)
	}
	return out
}

func eventNames(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.name
	}
	return out
}

func TestResponsesWhole(t *testing.T) {
	f := newResponsesFixture(t, Config{})
	r := f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"hello brave new world","instructions":"be kind","metadata":{"k":"v"}}`)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	w := decodeResponse(t, r)
	if w.ID != "resp_t1" || w.Object != "response" || w.Status != "completed" || w.Model != "echo" || w.CreatedAt != 1700000000 || w.PreviousResponseID != nil {
		t.Errorf("response %s", r.body)
	}
	if len(w.Output) != 1 || w.Output[0].Type != "message" || w.Output[0].Role != "assistant" || w.Output[0].Status != "completed" ||
		w.Output[0].Content[0].Type != "output_text" || w.Output[0].Content[0].Annotations == nil {
		t.Errorf("output %s", r.body)
	}
	if w.text() != "hello brave new world" {
		t.Errorf("text %q", w.text())
	}
	// Usage counts the system message too: 2 + 4 words in, 4 out.
	if w.Usage == nil || w.Usage.Input != 6 || w.Usage.Output != 4 || w.Usage.Total != 10 {
		t.Errorf("usage %s", r.body)
	}
	got := f.lastRequest()
	want := []request.Message{{Role: request.RoleSystem, Content: "be kind"}, {Role: request.RoleUser, Content: "hello brave new world"}}
	if !got.Chat || !reflect.DeepEqual(got.Messages, want) {
		t.Errorf("backend got %+v", got)
	}
}

func TestResponsesIncomplete(t *testing.T) {
	f := newResponsesFixture(t, Config{})
	w := decodeResponse(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"one two three","max_output_tokens":2}`))
	if w.Status != "incomplete" || w.IncompleteDetails == nil || w.IncompleteDetails.Reason != "max_output_tokens" || w.text() != "one two" || w.Output[0].Status != "incomplete" {
		t.Errorf("response %+v", w)
	}
	if f.lastRequest().Sampling.MaxTokens != 2 {
		t.Errorf("max_output_tokens did not reach the backend: %+v", f.lastRequest().Sampling)
	}

	evs := parseSSE(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"one two three","max_output_tokens":2,"stream":true}`).body)
	last := evs[len(evs)-1]
	if last.name != "response.incomplete" || !strings.Contains(last.raw, `"incomplete_details":{"reason":"max_output_tokens"}`) {
		t.Errorf("last event %s %s", last.name, last.raw)
	}
}

func TestResponsesStreamText(t *testing.T) {
	f := newResponsesFixture(t, Config{})
	r := f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"hello brave new world","stream":true}`)
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	evs := parseSSE(t, r.body)
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if got := eventNames(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	var deltas strings.Builder
	for _, e := range evs {
		if e.name == "response.output_text.delta" {
			deltas.WriteString(e.str("delta"))
			if e.str("item_id") != "msg_t1_0" || string(e.data["output_index"]) != "0" || string(e.data["content_index"]) != "0" {
				t.Errorf("delta %s", e.raw)
			}
		}
	}
	if deltas.String() != "hello brave new world" || evs[8].str("text") != "hello brave new world" {
		t.Errorf("deltas %q, done %s", deltas.String(), evs[8].raw)
	}
	var created, completed wireResponse
	_ = json.Unmarshal(evs[0].data["response"], &created)
	_ = json.Unmarshal(evs[11].data["response"], &completed)
	if created.Status != "in_progress" || created.ID != "resp_t1" || len(created.Output) != 0 || created.Usage != nil {
		t.Errorf("created %s", evs[0].raw)
	}
	if completed.Status != "completed" || completed.text() != "hello brave new world" || completed.Usage == nil || completed.Usage.Total != 8 {
		t.Errorf("completed %s", evs[11].raw)
	}
}

func TestResponsesStreamReasoningAndFunctionCall(t *testing.T) {
	f := newResponsesFixture(t, Config{})
	body := `{"model":"echo","input":"weather in Oslo","stream":true,"reasoning":{"effort":"medium"},
		"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`
	evs := parseSSE(t, f.do(t, "POST", "/v1/responses", body).body)
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
		"response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	if got := eventNames(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	if got := f.lastRequest().TemplateKwargs; !reflect.DeepEqual(got, map[string]any{"enable_thinking": true, "reasoning_effort": "medium"}) {
		t.Errorf("template kwargs %v", got)
	}
	if evs[4].str("delta") != "thinking" || !strings.Contains(evs[3].raw, `"part":{"type":"reasoning_text","text":""}`) {
		t.Errorf("reasoning events %s / %s", evs[3].raw, evs[4].raw)
	}
	if evs[10].str("name") != "get_weather" || evs[10].str("arguments") != `{"echo":"weather in Oslo"}` {
		t.Errorf("arguments done %s", evs[10].raw)
	}
	var done wireResponse
	_ = json.Unmarshal(evs[12].data["response"], &done)
	if len(done.Output) != 2 || done.Output[0].Type != "reasoning" || done.Output[1].Type != "function_call" ||
		done.Output[1].CallID != "call_0" || done.Output[1].Status != "completed" {
		t.Errorf("completed %s", evs[12].raw)
	}
}

func TestResponsesContinuation(t *testing.T) {
	f := newResponsesFixture(t, Config{})
	first := decodeResponse(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"hello there","instructions":"first rules"}`))
	second := decodeResponse(t, f.do(t, "POST", "/v1/responses",
		`{"model":"echo","input":"and again","previous_response_id":"`+first.ID+`","stream":false}`))
	if second.PreviousResponseID == nil || *second.PreviousResponseID != first.ID || second.text() != "and again" {
		t.Errorf("second %+v", second)
	}
	// The conversation continues; the first instructions do not.
	want := []request.Message{
		{Role: request.RoleUser, Content: "hello there"},
		{Role: request.RoleAssistant, Content: "hello there"},
		{Role: request.RoleUser, Content: "and again"},
	}
	if got := f.lastRequest().Messages; !reflect.DeepEqual(got, want) {
		t.Errorf("backend messages\n got %+v\nwant %+v", got, want)
	}

	// A tool round trip, the second turn streamed.
	call := decodeResponse(t, f.do(t, "POST", "/v1/responses",
		`{"model":"echo","input":"weather?","tools":[{"type":"function","name":"get_weather"}],"previous_response_id":"`+second.ID+`"}`))
	if len(call.Output) != 1 || call.Output[0].Type != "function_call" {
		t.Fatalf("no function call: %+v", call)
	}
	callID := call.Output[0].CallID
	evs := parseSSE(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","stream":true,"previous_response_id":"`+call.ID+`",
		"tools":[{"type":"function","name":"get_weather"}],"tool_choice":"none",
		"input":[{"type":"function_call_output","call_id":"`+callID+`","output":"sunny and warm"}]}`).body)
	var final wireResponse
	_ = json.Unmarshal(evs[len(evs)-1].data["response"], &final)
	if final.text() != "sunny and warm" {
		t.Errorf("final %s", evs[len(evs)-1].raw)
	}
	msgs := f.lastRequest().Messages
	// hello there, its answer, and again, its answer, weather?, the call,
	// the call's output.
	if n := len(msgs); n != 7 || len(msgs[5].ToolCalls) != 1 || msgs[5].ToolCalls[0].ID != callID || msgs[6].Role != request.RoleTool ||
		msgs[6].ToolCallID != callID || msgs[6].Name != "get_weather" || msgs[6].Content != "sunny and warm" {
		t.Errorf("backend messages %+v", msgs)
	}
	// A streamed response is stored too.
	decodeResponse(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"ok","previous_response_id":"`+final.ID+`"}`))
	if n := len(f.lastRequest().Messages); n != 9 {
		t.Errorf("continuing the streamed response sent %d messages, want 9", n)
	}
}

func TestResponsesUnknownPrevious(t *testing.T) {
	f := newResponsesFixture(t, Config{})
	doc := wantError(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"x","previous_response_id":"resp_nope"}`),
		400, "invalid_request_error", `"resp_nope"`)
	if doc.Error.Param == nil || *doc.Error.Param != "previous_response_id" {
		t.Errorf("param %v", doc.Error.Param)
	}
	// store:false keeps nothing to continue.
	w := decodeResponse(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"x","store":false}`))
	wantError(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"y","previous_response_id":"`+w.ID+`"}`),
		400, "invalid_request_error", w.ID)
	// Neither do failed responses.
	wantError(t, f.do(t, "POST", "/v1/responses", `{"model":"fail-after","input":"x"}`), 500, "server_error", "runner crashed")
	wantError(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"y","previous_response_id":"resp_t3"}`),
		400, "invalid_request_error", "resp_t3")
}

// TestResponsesStoreBound fills the node's store past its bound through
// the API: the oldest response can no longer be continued, the next one
// can.
func TestResponsesStoreBound(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping a test of 1025 requests")
	}
	f := newResponsesFixture(t, Config{})
	for range responses.DefaultStoreEntries + 1 {
		decodeResponse(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"x"}`))
	}
	wantError(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"y","previous_response_id":"resp_t1"}`),
		400, "invalid_request_error", "resp_t1")
	decodeResponse(t, f.do(t, "POST", "/v1/responses", `{"model":"echo","input":"y","previous_response_id":"resp_t2"}`))
}

func TestResponsesErrors(t *testing.T) {
	f := newResponsesFixture(t, Config{})
	tests := []struct {
		name, body    string
		status        int
		typ, param    string
		inMessage     string
		streamedToo   bool
		wantCode      string
		notInTheStore bool
	}{
		{name: "not_json", body: `{"model"`, status: 400, typ: "invalid_request_error", inMessage: "not valid JSON"},
		{name: "wrong_type", body: `{"model":"echo","input":"x","max_output_tokens":"many"}`, status: 400, typ: "invalid_request_error", param: "max_output_tokens", inMessage: "integer"},
		{name: "refused_field", body: `{"model":"echo","input":"x","background":true}`, status: 400, typ: "invalid_request_error", param: "background", inMessage: "background"},
		{name: "image_input", body: `{"model":"echo","input":[{"role":"user","content":[{"type":"input_image","image_url":"http://x"}]}]}`, status: 400, typ: "invalid_request_error", param: "input[0].content", inMessage: "text parts only"},
		{name: "unknown_model", body: `{"model":"nope","input":"x"}`, status: 404, typ: "not_found_error", param: "model", inMessage: "place_instance", wantCode: "model_not_found"},
		{name: "fails_at_once", body: `{"model":"fail-first","input":"x"}`, status: 503, typ: "service_unavailable_error", inMessage: "loading", streamedToo: true},
		{name: "fails_later", body: `{"model":"fail-after","input":"x"}`, status: 500, typ: "server_error", inMessage: "runner crashed"},
		{name: "silent_task", body: `{"model":"silent","input":"x"}`, status: 500, typ: "server_error", inMessage: "without a final chunk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bodies := []string{tt.body}
			if tt.streamedToo {
				bodies = append(bodies, strings.Replace(tt.body, `"input"`, `"stream":true,"input"`, 1))
			}
			for _, body := range bodies {
				doc := wantError(t, f.do(t, "POST", "/v1/responses", body), tt.status, tt.typ, tt.inMessage)
				if tt.param != "" && (doc.Error.Param == nil || *doc.Error.Param != tt.param) {
					t.Errorf("param %v, want %q", doc.Error.Param, tt.param)
				}
				if tt.wantCode != "" && (doc.Error.Code == nil || *doc.Error.Code != tt.wantCode) {
					t.Errorf("code %v, want %q", doc.Error.Code, tt.wantCode)
				}
			}
		})
	}
	t.Run("no_key", func(t *testing.T) {
		keyed := newResponsesFixture(t, Config{APIKey: "sk-k"})
		keyed.key = ""
		wantError(t, keyed.do(t, "POST", "/v1/responses", `{"model":"echo","input":"x"}`), 401, "authentication_error", "API key")
		if keyed.lastRequest().Model != "" {
			t.Error("an unauthenticated request reached the backend")
		}
	})
	t.Run("wrong_method", func(t *testing.T) {
		r := f.do(t, "GET", "/v1/responses", "")
		wantError(t, r, 405, "invalid_request_error", "not allowed")
		if r.header.Get("Allow") == "" {
			t.Error("no Allow header")
		}
	})
}

// TestResponsesStreamFailure: a task that fails after the stream began
// ends with an error event and response.failed.
func TestResponsesStreamFailure(t *testing.T) {
	f := newResponsesFixture(t, Config{})
	r := f.do(t, "POST", "/v1/responses", `{"model":"fail-after","input":"x","stream":true}`)
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	evs := parseSSE(t, r.body)
	names := eventNames(evs)
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "error",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.failed"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("events\n got %v\nwant %v", names, want)
	}
	e := evs[6]
	if e.str("message") != "runner crashed" || e.str("code") != "internal_error" || string(e.data["param"]) != "null" {
		t.Errorf("error event %s", e.raw)
	}
	var failed wireResponse
	_ = json.Unmarshal(evs[10].data["response"], &failed)
	if failed.Status != "failed" || failed.Error == nil || failed.Error.Code != "server_error" || failed.text() != "ab" {
		t.Errorf("failed %s", evs[10].raw)
	}
	if !strings.Contains(f.log.String(), "runner crashed") {
		t.Error("the stream failure is not logged")
	}
}

func TestResponsesClientDisconnectCancelsTask(t *testing.T) {
	f := newResponsesFixture(t, Config{})
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream_%v", stream), func(t *testing.T) {
			body := fmt.Sprintf(`{"model":"block","input":"x","stream":%v}`, stream)
			f.leaveAndWantCancelled(t, "/v1/responses", body, stream, func(r io.Reader) error {
				// Read up to the first text delta, then leave.
				sc := bufio.NewScanner(r)
				for sc.Scan() && sc.Text() != "event: response.output_text.delta" {
				}
				return sc.Err()
			})
		})
	}
}

// TestResponsesNodeClient runs openai@6.30.1's client.responses.create
// against the API with the test backend (responses.mjs, which the lead also
// runs against a live node).
func TestResponsesNodeClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the openai npm client check")
	}
	dir, node := testkit.NodeProject(t, "testdata/openai-client", "client.mjs", "responses.mjs")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	const key = "sk-responses-client"
	f := newResponsesFixture(t, Config{APIKey: key})
	out := runNodeScript(ctx, t, node, dir, "responses.mjs", f.url+"/v1", "echo", key)
	var got struct {
		Whole struct {
			ID, Object, Status string
			OutputText         string   `json:"output_text"`
			OutputTypes        []string `json:"output_types"`
			Usage              struct {
				Total int `json:"total_tokens"`
			}
		}
		Stream struct {
			Events             []string
			Deltas             string
			Completed          bool
			CompletedText      string `json:"completed_text"`
			SequenceContiguous bool   `json:"sequence_contiguous"`
		}
		Tools struct {
			CallName   string `json:"call_name"`
			CallID     string `json:"call_id"`
			Arguments  string
			FollowUp   string `json:"follow_up_text"`
			FollowUpID string `json:"follow_up_previous"`
		}
		UnknownPrevious struct {
			Status  int
			Param   string
			Message string
		} `json:"unknown_previous"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %s: %v", out, err)
	}
	const text = "hello brave new world"
	checks := []struct {
		name string
		ok   bool
	}{
		{"whole", strings.HasPrefix(got.Whole.ID, "resp_") && got.Whole.Object == "response" && got.Whole.Status == "completed" &&
			got.Whole.OutputText == text && reflect.DeepEqual(got.Whole.OutputTypes, []string{"message"}) && got.Whole.Usage.Total == 8},
		{"stream", got.Stream.Deltas == text && got.Stream.Completed && got.Stream.CompletedText == text && got.Stream.SequenceContiguous &&
			len(got.Stream.Events) > 2 && got.Stream.Events[0] == "response.created" && got.Stream.Events[len(got.Stream.Events)-1] == "response.completed"},
		{"tools", got.Tools.CallName == "get_weather" && got.Tools.CallID != "" && strings.Contains(got.Tools.Arguments, "echo") &&
			got.Tools.FollowUp == "sunny, 21 C" && strings.HasPrefix(got.Tools.FollowUpID, "resp_")},
		{"unknown_previous", got.UnknownPrevious.Status == 400 && got.UnknownPrevious.Param == "previous_response_id" &&
			strings.Contains(got.UnknownPrevious.Message, "resp_skulk_client_check_unknown")},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: unexpected client view: %s", c.name, out)
		}
	}
}
