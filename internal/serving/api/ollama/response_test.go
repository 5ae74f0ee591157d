package ollama

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at returns t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// script is a task's chunks with their arrival times (ms after t0).
var script = []struct {
	ms int
	c  request.Chunk
}{
	{100, request.Chunk{Kind: request.ChunkDelta, Reasoning: "let me think"}},
	{150, request.Chunk{Kind: request.ChunkDelta}}, // empty: no line
	{200, request.Chunk{Kind: request.ChunkDelta, Content: "Hello", Logprobs: []request.TokenLogprob{{Token: "Hello", Logprob: -0.5, Top: []request.TopLogprob{{Token: "Hi", Logprob: -1}}}}}},
	{300, request.Chunk{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: "call_0", Name: "f", Arguments: `{"a":1}`}}},
	{400, request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishToolCalls, Usage: &request.Usage{PromptTokens: 7, CompletionTokens: 3}}},
}

func TestChatStream(t *testing.T) {
	s := NewChatStream("m", t0)
	var lines []string
	for _, sc := range script {
		for _, l := range s.Encode(sc.c, at(sc.ms)) {
			lines = append(lines, marshal(t, l))
		}
	}
	want := []string{
		`{"model":"m","created_at":"2026-01-02T03:04:05.1Z","message":{"role":"assistant","content":"","thinking":"let me think"},"done":false}`,
		`{"model":"m","created_at":"2026-01-02T03:04:05.2Z","message":{"role":"assistant","content":"Hello"},"done":false,"logprobs":[{"token":"Hello","logprob":-0.5,"bytes":[72,101,108,108,111],"top_logprobs":[{"token":"Hi","logprob":-1,"bytes":[72,105]}]}]}`,
		`{"model":"m","created_at":"2026-01-02T03:04:05.3Z","message":{"role":"assistant","content":"","tool_calls":[{"id":"call_0","function":{"index":0,"name":"f","arguments":{"a":1}}}]},"done":false}`,
		// total 400 ms; prompt eval until the first chunk (100 ms); eval the rest (300 ms).
		`{"model":"m","created_at":"2026-01-02T03:04:05.4Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":400000000,"load_duration":0,"prompt_eval_count":7,"prompt_eval_duration":100000000,"eval_count":3,"eval_duration":300000000}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), lines)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d\n got %s\nwant %s", i, lines[i], want[i])
		}
	}
	if got := s.Encode(request.Chunk{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassInternal, "x")}, at(500)); got != nil {
		t.Errorf("an error chunk encoded as %v", got)
	}
}

func TestChatAccumulator(t *testing.T) {
	a := NewChatAccumulator("m", t0)
	for _, sc := range script {
		a.Add(sc.c, at(sc.ms))
	}
	got := marshal(t, a.Result())
	want := `{"model":"m","created_at":"2026-01-02T03:04:05.4Z","message":{"role":"assistant","content":"Hello","thinking":"let me think","tool_calls":[{"id":"call_0","function":{"index":0,"name":"f","arguments":{"a":1}}}]},"done":true,"done_reason":"stop","total_duration":400000000,"load_duration":0,"prompt_eval_count":7,"prompt_eval_duration":100000000,"eval_count":3,"eval_duration":300000000,"logprobs":[{"token":"Hello","logprob":-0.5,"bytes":[72,101,108,108,111],"top_logprobs":[{"token":"Hi","logprob":-1,"bytes":[72,105]}]}]}`
	if got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}

func TestGenerateStreamAndAccumulator(t *testing.T) {
	chunks := []request.Chunk{
		{Kind: request.ChunkDelta, Content: "Once"},
		{Kind: request.ChunkDelta, Content: " upon", Reasoning: "r"},
		{Kind: request.ChunkDone, FinishReason: request.FinishLength, Usage: &request.Usage{PromptTokens: 2, CompletionTokens: 2}},
	}
	s := NewGenerateStream("m", t0)
	a := NewGenerateAccumulator("m", t0)
	var lines []string
	for i, c := range chunks {
		for _, l := range s.Encode(c, at(10*(i+1))) {
			lines = append(lines, marshal(t, l))
		}
		a.Add(c, at(10*(i+1)))
	}
	want := []string{
		`{"model":"m","created_at":"2026-01-02T03:04:05.01Z","response":"Once","done":false}`,
		`{"model":"m","created_at":"2026-01-02T03:04:05.02Z","response":" upon","thinking":"r","done":false}`,
		`{"model":"m","created_at":"2026-01-02T03:04:05.03Z","response":"","done":true,"done_reason":"length","total_duration":30000000,"load_duration":0,"prompt_eval_count":2,"prompt_eval_duration":10000000,"eval_count":2,"eval_duration":20000000}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), lines)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d\n got %s\nwant %s", i, lines[i], want[i])
		}
	}
	got := marshal(t, a.Result())
	wantWhole := `{"model":"m","created_at":"2026-01-02T03:04:05.03Z","response":"Once upon","thinking":"r","done":true,"done_reason":"length","total_duration":30000000,"load_duration":0,"prompt_eval_count":2,"prompt_eval_duration":10000000,"eval_count":2,"eval_duration":20000000}`
	if got != wantWhole {
		t.Errorf("whole\n got %s\nwant %s", got, wantWhole)
	}
}

func TestDoneReason(t *testing.T) {
	for in, want := range map[string]string{
		request.FinishStop: "stop", request.FinishLength: "length", request.FinishToolCalls: "stop", request.FinishCancelled: "stop", "": "stop",
	} {
		if got := doneReason(in); got != want {
			t.Errorf("doneReason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestToolCallArguments(t *testing.T) {
	tests := []struct{ args, want string }{
		{`{"a": [1, 2]}`, `{"a": [1, 2]}`},
		{``, `{}`},
		{`not json`, `"not json"`},
		{`[1]`, `"[1]"`},
	}
	for _, tt := range tests {
		got := string(toolCallFrom(&request.ToolCall{Name: "f", Arguments: tt.args}, 0).Function.Arguments)
		if got != tt.want {
			t.Errorf("arguments %q: got %s, want %s", tt.args, got, tt.want)
		}
	}
}

func TestLoaded(t *testing.T) {
	if got, want := marshal(t, ChatLoaded("m", DoneLoad, t0)), `{"model":"m","created_at":"2026-01-02T03:04:05Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"load"}`; got != want {
		t.Errorf("chat\n got %s\nwant %s", got, want)
	}
	if got, want := marshal(t, GenerateLoaded("m", DoneLoad, t0)), `{"model":"m","created_at":"2026-01-02T03:04:05Z","response":"","done":true,"done_reason":"load"}`; got != want {
		t.Errorf("generate\n got %s\nwant %s", got, want)
	}
}

func TestErrorFrom(t *testing.T) {
	if got, want := marshal(t, ErrorFrom(fault.Errorf(fault.ClassInvalid, "bad"))), `{"error":"bad"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	e := ModelNotFound("x", "place it first")
	if e.Class != fault.ClassNotFound || e.Message != "model 'x' not found: place it first" {
		t.Errorf("ModelNotFound = %+v", e)
	}
}

// TestTimingsSplitAtFirstText: the empty delta that carries the prompt
// count is not the first output; prompt evaluation lasts until real text.
func TestTimingsSplitAtFirstText(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	at := func(ns int) time.Time { return t0.Add(time.Duration(ns)) }
	usage := &request.Usage{PromptTokens: 4, CompletionTokens: 1}
	chunks := []request.Chunk{
		{Kind: request.ChunkDelta, Usage: &request.Usage{PromptTokens: 4}},
		{Kind: request.ChunkDelta, Content: "a"},
		{Kind: request.ChunkDone, FinishReason: request.FinishStop, Usage: usage},
	}
	times := []time.Time{at(1), at(5), at(9)}
	a := NewChatAccumulator("m", t0)
	s := NewChatStream("m", t0)
	var last ChatResponse
	for i, c := range chunks {
		a.Add(c, times[i])
		if lines := s.Encode(c, times[i]); len(lines) > 0 {
			last = lines[len(lines)-1]
		}
	}
	for name, r := range map[string]ChatResponse{"accumulator": a.Result(), "stream": last} {
		m := r.Metrics
		if m == nil || m.PromptEvalDuration != 5 || m.EvalDuration != 4 || m.TotalDuration != 9 || m.PromptEvalCount != 4 {
			t.Errorf("%s: metrics %+v, want prompt eval 5 ns, eval 4 ns, total 9 ns", name, m)
		}
	}
}

// TestPromptEvalCountLeavesOutCachedTokens: as Ollama counts it,
// prompt_eval_count is the prompt tokens evaluated, not those the cache
// held.
func TestPromptEvalCountLeavesOutCachedTokens(t *testing.T) {
	a := NewGenerateAccumulator("m", t0)
	a.Add(request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop, Usage: &request.Usage{PromptTokens: 10, CompletionTokens: 2, CachedTokens: 6}}, at(10))
	if got := a.Result(); got.PromptEvalCount != 4 || got.EvalCount != 2 {
		t.Errorf("prompt_eval_count %d, eval_count %d; want 4 and 2", got.PromptEvalCount, got.EvalCount)
	}
}
