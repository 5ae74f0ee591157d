package responses

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

// build runs chunks through a Builder for the request body and returns
// every event (Start's first) and the builder.
func build(t *testing.T, body string, chunks ...request.Chunk) ([]Event, *Builder) {
	t.Helper()
	d, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(Meta{ID: "resp_u1", Model: d.Model, Created: 1700000000}, &d)
	events := b.Start()
	for _, c := range chunks {
		if c.Kind == request.ChunkError {
			events = append(events, b.Fail(c.Error)...)
			continue
		}
		events = append(events, b.Add(c)...)
	}
	return events, b
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkSequence checks the invariants every stream keeps: sequence numbers
// count from 0 without gaps, each payload's type is its event type, and the
// first two events are created and in_progress.
func checkSequence(t *testing.T, events []Event) {
	t.Helper()
	for i, ev := range events {
		var head struct {
			Type string `json:"type"`
			Seq  *int   `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(marshal(t, ev)), &head); err != nil {
			t.Fatal(err)
		}
		if head.Seq == nil || *head.Seq != i {
			t.Errorf("event %d (%s) has sequence_number %v", i, ev.EventType(), head.Seq)
		}
		if head.Type != ev.EventType() {
			t.Errorf("event %d: payload type %q, event type %q", i, head.Type, ev.EventType())
		}
	}
	if len(events) < 2 || events[0].EventType() != EventCreated || events[1].EventType() != EventInProgress {
		t.Errorf("a stream starts with created, in_progress; got %v", types(events))
	}
}

func types(events []Event) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = ev.EventType()
	}
	return out
}

func TestBuilderTextStream(t *testing.T) {
	events, b := build(t, `{"model":"m","input":"hi","instructions":"sys","temperature":0.5}`,
		request.Chunk{Kind: request.ChunkDelta, Content: "Hello"},
		request.Chunk{Kind: request.ChunkDelta, Content: " world"},
		request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop, Usage: &request.Usage{PromptTokens: 3, CompletionTokens: 2}},
	)
	checkSequence(t, events)
	const echo = `"error":null,"incomplete_details":null,"instructions":"sys","max_output_tokens":null,"metadata":{},"model":"m",`
	const tail = `"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},` +
		`"temperature":0.5,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled",`
	msg := `{"type":"message","id":"msg_u1_0","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello world","annotations":[]}]}`
	want := []string{
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_u1","object":"response","created_at":1700000000,"status":"in_progress",` + echo + `"output":[],` + tail + `"usage":null}}`,
		`{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_u1","object":"response","created_at":1700000000,"status":"in_progress",` + echo + `"output":[],` + tail + `"usage":null}}`,
		`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"message","id":"msg_u1_0","status":"in_progress","role":"assistant","content":[]}}`,
		`{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_u1_0","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_u1_0","output_index":0,"content_index":0,"delta":"Hello","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_u1_0","output_index":0,"content_index":0,"delta":" world","logprobs":[]}`,
		`{"type":"response.output_text.done","sequence_number":6,"item_id":"msg_u1_0","output_index":0,"content_index":0,"text":"Hello world","logprobs":[]}`,
		`{"type":"response.content_part.done","sequence_number":7,"item_id":"msg_u1_0","output_index":0,"content_index":0,"part":{"type":"output_text","text":"Hello world","annotations":[]}}`,
		`{"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":` + msg + `}`,
		`{"type":"response.completed","sequence_number":9,"response":{"id":"resp_u1","object":"response","created_at":1700000000,"status":"completed",` + echo + `"output":[` + msg + `],` + tail +
			`"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":5}}}`,
	}
	if len(events) != len(want) {
		t.Fatalf("%d events %v, want %d", len(events), types(events), len(want))
	}
	for i, ev := range events {
		if got := marshal(t, ev); got != want[i] {
			t.Errorf("event %d\n got %s\nwant %s", i, got, want[i])
		}
	}
	// The whole answer is the completed event's response.
	if got, want := marshal(t, b.Response()), marshal(t, events[len(events)-1].(*ResponseEvent).Response); got != want {
		t.Errorf("Response()\n got %s\nwant %s", got, want)
	}
	if got := b.Messages(); !reflect.DeepEqual(got, []request.Message{{Role: request.RoleAssistant, Content: "Hello world"}}) {
		t.Errorf("Messages() %+v", got)
	}
	if b.Add(request.Chunk{Kind: request.ChunkDelta, Content: "late"}) != nil || b.Fail(fault.Errorf(fault.ClassInternal, "late")) != nil {
		t.Error("a finished builder made more events")
	}
}

func TestBuilderReasoningAndFunctionCall(t *testing.T) {
	events, b := build(t, `{"model":"m","input":"hi","tools":[{"type":"function","name":"get"}],"reasoning":{"effort":"low"}}`,
		request.Chunk{Kind: request.ChunkDelta, Reasoning: "let me "},
		request.Chunk{Kind: request.ChunkDelta, Reasoning: "think", Content: "I'll look"},
		request.Chunk{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: "call_9", Name: "get", Arguments: `{"q":1}`}},
		request.Chunk{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{Name: "get", Arguments: `{}`}},
		request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishToolCalls, Usage: &request.Usage{PromptTokens: 1, CompletionTokens: 9}},
	)
	checkSequence(t, events)
	want := []string{
		EventCreated, EventInProgress,
		EventOutputItemAdded, EventContentPartAdded, EventReasoningTextDelta, EventReasoningTextDelta,
		EventReasoningTextDone, EventContentPartDone, EventOutputItemDone,
		EventOutputItemAdded, EventContentPartAdded, EventOutputTextDelta,
		EventOutputTextDone, EventContentPartDone, EventOutputItemDone,
		EventOutputItemAdded, EventArgumentsDelta, EventArgumentsDone, EventOutputItemDone,
		EventOutputItemAdded, EventArgumentsDelta, EventArgumentsDone, EventOutputItemDone,
		EventCompleted,
	}
	if got := types(events); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	wantJSON := map[int]string{
		2:  `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"reasoning","id":"rs_u1_0","status":"in_progress","summary":[],"content":[]}}`,
		3:  `{"type":"response.content_part.added","sequence_number":3,"item_id":"rs_u1_0","output_index":0,"content_index":0,"part":{"type":"reasoning_text","text":""}}`,
		4:  `{"type":"response.reasoning_text.delta","sequence_number":4,"item_id":"rs_u1_0","output_index":0,"content_index":0,"delta":"let me "}`,
		6:  `{"type":"response.reasoning_text.done","sequence_number":6,"item_id":"rs_u1_0","output_index":0,"content_index":0,"text":"let me think"}`,
		7:  `{"type":"response.content_part.done","sequence_number":7,"item_id":"rs_u1_0","output_index":0,"content_index":0,"part":{"type":"reasoning_text","text":"let me think"}}`,
		8:  `{"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":{"type":"reasoning","id":"rs_u1_0","status":"completed","summary":[],"content":[{"type":"reasoning_text","text":"let me think"}]}}`,
		9:  `{"type":"response.output_item.added","sequence_number":9,"output_index":1,"item":{"type":"message","id":"msg_u1_1","status":"in_progress","role":"assistant","content":[]}}`,
		15: `{"type":"response.output_item.added","sequence_number":15,"output_index":2,"item":{"type":"function_call","id":"fc_u1_2","call_id":"call_9","name":"get","arguments":"","status":"in_progress"}}`,
		16: `{"type":"response.function_call_arguments.delta","sequence_number":16,"item_id":"fc_u1_2","output_index":2,"delta":"{\"q\":1}"}`,
		17: `{"type":"response.function_call_arguments.done","sequence_number":17,"item_id":"fc_u1_2","output_index":2,"name":"get","arguments":"{\"q\":1}"}`,
		18: `{"type":"response.output_item.done","sequence_number":18,"output_index":2,"item":{"type":"function_call","id":"fc_u1_2","call_id":"call_9","name":"get","arguments":"{\"q\":1}","status":"completed"}}`,
		// A call the runner left without an id gets one.
		22: `{"type":"response.output_item.done","sequence_number":22,"output_index":3,"item":{"type":"function_call","id":"fc_u1_3","call_id":"call_u1_1","name":"get","arguments":"{}","status":"completed"}}`,
	}
	for i, w := range wantJSON {
		if got := marshal(t, events[i]); got != w {
			t.Errorf("event %d\n got %s\nwant %s", i, got, w)
		}
	}
	r := b.Response()
	if r.Status != StatusCompleted || len(r.Output) != 4 || r.Usage.TotalTokens != 10 || *r.Reasoning.Effort != "low" {
		t.Errorf("response %s", marshal(t, r))
	}
	wantMsgs := []request.Message{{Role: request.RoleAssistant, Content: "I'll look", ReasoningContent: "let me think", ToolCalls: []request.ToolCall{
		{ID: "call_9", Name: "get", Arguments: `{"q":1}`}, {ID: "call_u1_1", Name: "get", Arguments: `{}`}}}}
	if got := b.Messages(); !reflect.DeepEqual(got, wantMsgs) {
		t.Errorf("Messages()\n got %+v\nwant %+v", got, wantMsgs)
	}
}

func TestBuilderIncomplete(t *testing.T) {
	events, b := build(t, `{"model":"m","input":"hi","max_output_tokens":1}`,
		request.Chunk{Kind: request.ChunkDelta, Content: "cut"},
		request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishLength, Usage: &request.Usage{PromptTokens: 1, CompletionTokens: 1}},
	)
	checkSequence(t, events)
	last := events[len(events)-1]
	if last.EventType() != EventIncomplete {
		t.Fatalf("last event %s, want %s", last.EventType(), EventIncomplete)
	}
	r := b.Response()
	if r.Status != StatusIncomplete || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" || *r.MaxOutputTokens != 1 {
		t.Errorf("response %s", marshal(t, r))
	}
	if it := r.Output[0].(*MessageItem); it.Status != StatusIncomplete {
		t.Errorf("the cut message has status %q, want incomplete", it.Status)
	}

	// An operator's cancel ends the response as cancelled.
	events, b = build(t, `{"model":"m","input":"hi"}`, request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishCancelled})
	if got := types(events); !reflect.DeepEqual(got, []string{EventCreated, EventInProgress, EventIncomplete}) {
		t.Errorf("cancelled events %v", got)
	}
	if r := b.Response(); r.Status != StatusCancelled || r.IncompleteDetails != nil || r.Usage == nil {
		t.Errorf("cancelled response %s", marshal(t, r))
	}
}

func TestBuilderFail(t *testing.T) {
	events, b := build(t, `{"model":"m","input":"hi"}`,
		request.Chunk{Kind: request.ChunkDelta, Content: "half"},
		request.Chunk{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassInternal, "runner crashed")},
	)
	checkSequence(t, events)
	want := []string{EventCreated, EventInProgress, EventOutputItemAdded, EventContentPartAdded, EventOutputTextDelta,
		EventError, EventOutputTextDone, EventContentPartDone, EventOutputItemDone, EventFailed}
	if got := types(events); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	if got, w := marshal(t, events[5]), `{"type":"error","sequence_number":5,"code":"internal_error","message":"runner crashed","param":null}`; got != w {
		t.Errorf("error event\n got %s\nwant %s", got, w)
	}
	r := b.Response()
	if r.Status != StatusFailed || r.Error == nil || r.Error.Code != "server_error" || r.Error.Message != "runner crashed" || r.Usage != nil {
		t.Errorf("failed response %s", marshal(t, r))
	}
	if it := r.Output[0].(*MessageItem); it.Status != StatusIncomplete || it.Content[0].Text != "half" {
		t.Errorf("the cut message %+v", it)
	}
	if !b.Done() {
		t.Error("a failed builder is not done")
	}
}

func TestBuilderLogprobs(t *testing.T) {
	lp := []request.TokenLogprob{{Token: "a", Logprob: -0.5, Top: []request.TopLogprob{{Token: "b", Logprob: -1}}}}
	events, b := build(t, `{"model":"m","input":"hi","include":["message.output_text.logprobs"],"top_logprobs":1}`,
		request.Chunk{Kind: request.ChunkDelta, Content: "a", Logprobs: lp},
		request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop},
	)
	delta := marshal(t, events[4])
	if !strings.Contains(delta, `"logprobs":[{"token":"a","logprob":-0.5,"top_logprobs":[{"token":"b","logprob":-1}]}]`) {
		t.Errorf("delta %s", delta)
	}
	part := marshal(t, b.Response().Output[0])
	if !strings.Contains(part, `"logprobs":[{"token":"a","bytes":[97],"logprob":-0.5,"top_logprobs":[{"token":"b","bytes":[98],"logprob":-1}]}]`) {
		t.Errorf("output item %s", part)
	}
}

// TestEventsMatchSDKTypes checks each event's JSON keys against the
// property names of openai@6.30.1's TypeScript declarations, when the
// package is installed next to the client script.
func TestEventsMatchSDKTypes(t *testing.T) {
	events, _ := build(t, `{"model":"m","input":"hi","tools":[{"type":"function","name":"get"}]}`,
		request.Chunk{Kind: request.ChunkDelta, Reasoning: "r"},
		request.Chunk{Kind: request.ChunkDelta, Content: "c"},
		request.Chunk{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: "x", Name: "get", Arguments: "{}"}},
		request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop},
	)
	decl := sdkDeclarations(t)
	ifaces := map[string]string{
		EventCreated: "ResponseCreatedEvent", EventInProgress: "ResponseInProgressEvent", EventCompleted: "ResponseCompletedEvent",
		EventOutputItemAdded: "ResponseOutputItemAddedEvent", EventOutputItemDone: "ResponseOutputItemDoneEvent",
		EventContentPartAdded: "ResponseContentPartAddedEvent", EventContentPartDone: "ResponseContentPartDoneEvent",
		EventOutputTextDelta: "ResponseTextDeltaEvent", EventOutputTextDone: "ResponseTextDoneEvent",
		EventReasoningTextDelta: "ResponseReasoningTextDeltaEvent", EventReasoningTextDone: "ResponseReasoningTextDoneEvent",
		EventArgumentsDelta: "ResponseFunctionCallArgumentsDeltaEvent", EventArgumentsDone: "ResponseFunctionCallArgumentsDoneEvent",
	}
	seen := map[string]bool{}
	for _, ev := range events {
		name, ok := ifaces[ev.EventType()]
		if !ok {
			t.Errorf("event %s has no SDK interface in this test", ev.EventType())
			continue
		}
		seen[ev.EventType()] = true
		checkKeys(t, decl, name, marshal(t, ev))
	}
	for typ := range ifaces {
		if !seen[typ] {
			t.Errorf("event %s not exercised", typ)
		}
	}
	final := events[len(events)-1].(*ResponseEvent).Response
	items := map[string]string{TypeReasoning: "ResponseReasoningItem", TypeMessage: "ResponseOutputMessage", TypeFunctionCall: "ResponseFunctionToolCall"}
	for _, it := range final.Output {
		checkKeys(t, decl, items[it.itemType()], marshal(t, it))
	}
	checkKeys(t, decl, "ResponseOutputText", marshal(t, final.Output[1].(*MessageItem).Content[0]))
	checkKeys(t, decl, "ResponseUsage", marshal(t, final.Usage))

	failEvents, failed := build(t, `{"model":"m","input":"hi"}`, request.Chunk{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassInternal, "x")})
	checkKeys(t, decl, "ResponseErrorEvent", marshal(t, failEvents[2]))
	checkKeys(t, decl, "ResponseFailedEvent", marshal(t, failEvents[3]))
	checkKeys(t, decl, "Response", marshal(t, failed.Response()))
	checkKeys(t, decl, "ResponseError", marshal(t, failed.Response().Error))
}

// sdkDeclarations reads openai@6.30.1's declarations of the Responses API;
// it skips the test when `npm ci` has not been run in the client folder.
func sdkDeclarations(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "openai-client", "node_modules", "openai", "resources", "responses", "responses.d.ts"))
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("openai is not installed in ../testdata/openai-client (run npm ci there)")
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// clientComputed are required properties the SDK fills in itself.
var clientComputed = map[string]bool{"Response.output_text": true}

// checkKeys checks the top-level keys of the JSON object doc against the
// properties of the TypeScript interface name: every key is declared, and
// every required property is present.
func checkKeys(t *testing.T, decl, name, doc string) {
	t.Helper()
	start := strings.Index(decl, "\nexport interface "+name+" {\n")
	if start < 0 {
		t.Fatalf("no interface %s in the SDK declarations", name)
	}
	body := decl[start+len("\nexport interface "+name+" {\n"):]
	body = body[:strings.Index(body, "\n}\n")]
	props := map[string]bool{} // name -> required
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "     ") {
			continue // nested, or a comment's continuation
		}
		line = strings.TrimSpace(line)
		colon := strings.Index(line, ":")
		if colon <= 0 || strings.HasPrefix(line, "*") || strings.HasPrefix(line, "/") {
			continue
		}
		prop := line[:colon]
		optional := strings.HasSuffix(prop, "?")
		props[strings.TrimSuffix(prop, "?")] = !optional
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for k := range obj {
		if _, ok := props[k]; !ok {
			t.Errorf("%s: key %q is not a property of the SDK's interface", name, k)
		}
	}
	for p, required := range props {
		if _, ok := obj[p]; required && !ok && !clientComputed[name+"."+p] {
			t.Errorf("%s: required property %q is missing from %s", name, p, doc)
		}
	}
}
