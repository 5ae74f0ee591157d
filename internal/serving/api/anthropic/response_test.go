package anthropic

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

var meta = Meta{ID: "msg_abc", Model: "m"}

func delta(content, reasoning string) request.Chunk {
	return request.Chunk{Kind: request.ChunkDelta, Content: content, Reasoning: reasoning}
}

func call(id, name, args string) request.Chunk {
	return request.Chunk{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: id, Name: name, Arguments: args}}
}

func done(finish string, in, out int) request.Chunk {
	return request.Chunk{Kind: request.ChunkDone, FinishReason: finish, Usage: &request.Usage{PromptTokens: in, CompletionTokens: out}}
}

func doneBy(stop string, in, out int) request.Chunk {
	c := done(request.FinishStop, in, out)
	c.StopSequence = stop
	return c
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAccumulator(t *testing.T) {
	tests := []struct {
		name   string
		chunks []request.Chunk
		want   string
	}{
		{"text", []request.Chunk{delta("Hello", ""), delta(" world", ""), done(request.FinishStop, 3, 2)},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hello world"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}`},
		{"thinking_then_text", []request.Chunk{delta("", "Let me"), delta("", " think."), delta("Yes", "!"), delta(".", ""), done(request.FinishLength, 1, 9)},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"Let me think.!","signature":""},{"type":"text","text":"Yes."}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":9}}`},
		{"tool_use", []request.Chunk{delta("Checking.", ""), call("call_0", "get_weather", `{"city":"Paris"}`), call("call_1", "noop", ""), done(request.FinishToolCalls, 5, 7)},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_abc_0","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_abc_1","name":"noop","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":7}}`},
		{"tool_call_with_stop_finish", []request.Chunk{call("c", "t", `{}`), done(request.FinishStop, 1, 1)},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_abc_0","name":"t","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`},
		{"broken_arguments_stay_valid_json", []request.Chunk{call("c", "t", `{"a":`), call("d", "u", `[1]`), done(request.FinishToolCalls, 1, 1)},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_abc_0","name":"t","input":"{\"a\":"},{"type":"tool_use","id":"toolu_abc_1","name":"u","input":"[1]"}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`},
		{"stop_sequence", []request.Chunk{delta("Once upon", ""), doneBy("\n\nHuman:", 4, 3)},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Once upon"}],"stop_reason":"stop_sequence","stop_sequence":"\n\nHuman:","usage":{"input_tokens":4,"output_tokens":3}}`},
		{"empty_and_cancelled", []request.Chunk{delta("", ""), {Kind: request.ChunkDone, FinishReason: request.FinishCancelled}},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAccumulator(meta)
			for _, c := range tt.chunks {
				a.Add(c)
			}
			if got := mustJSON(t, a.Result()); got != tt.want {
				t.Fatalf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// wire renders events as they go on the wire, one "name data" line each.
func wire(t *testing.T, events []Event) []string {
	t.Helper()
	out := make([]string, len(events))
	for i, ev := range events {
		data := mustJSON(t, ev.Data)
		var typ struct{ Type string }
		if err := json.Unmarshal([]byte(data), &typ); err != nil || typ.Type != ev.Name {
			t.Fatalf("event %s has payload type %q: %s", ev.Name, typ.Type, data)
		}
		out[i] = ev.Name + " " + data
	}
	return out
}

func TestStream(t *testing.T) {
	const start = `message_start {"type":"message_start","message":{"id":"msg_abc","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`
	const ping = `ping {"type":"ping"}`
	tests := []struct {
		name   string
		chunks []request.Chunk
		want   []string
	}{
		{"text", []request.Chunk{delta("Hello", ""), delta(" world", ""), done(request.FinishStop, 3, 2)}, []string{
			start, ping,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}`,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			`message_delta {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":3,"output_tokens":2}}`,
			`message_stop {"type":"message_stop"}`,
		}},
		{"thinking_text_tools", []request.Chunk{
			delta("", "Hmm"), delta("Let me", " ok"), delta(" check.", ""),
			call("call_0", "get_weather", `{"city":"Paris"}`), call("call_1", "noop", ""),
			done(request.FinishToolCalls, 4, 12),
		}, []string{
			start, ping,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hmm"}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" ok"}}`,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me"}}`,
			`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" check."}}`,
			`content_block_stop {"type":"content_block_stop","index":1}`,
			`content_block_start {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_abc_0","name":"get_weather","input":{}}}`,
			`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Paris\"}"}}`,
			`content_block_stop {"type":"content_block_stop","index":2}`,
			`content_block_start {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_abc_1","name":"noop","input":{}}}`,
			`content_block_delta {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
			`content_block_stop {"type":"content_block_stop","index":3}`,
			`message_delta {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":4,"output_tokens":12}}`,
			`message_stop {"type":"message_stop"}`,
		}},
		{"thinking_back_to_text_and_length", []request.Chunk{delta("a", ""), delta("", "b"), delta("c", ""), done(request.FinishLength, 1, 3)}, []string{
			start, ping,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"b"}}`,
			`content_block_stop {"type":"content_block_stop","index":1}`,
			`content_block_start {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"c"}}`,
			`content_block_stop {"type":"content_block_stop","index":2}`,
			`message_delta {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":1,"output_tokens":3}}`,
			`message_stop {"type":"message_stop"}`,
		}},
		{"stop_sequence", []request.Chunk{doneBy("END", 2, 1)}, []string{
			`message_start {"type":"message_start","message":{"id":"msg_abc","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2,"output_tokens":0}}}`, ping,
			`message_delta {"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"input_tokens":2,"output_tokens":1}}`,
			`message_stop {"type":"message_stop"}`,
		}},
		{"nothing_generated", []request.Chunk{delta("", ""), done(request.FinishStop, 2, 0)}, []string{
			start, ping,
			`message_delta {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":2,"output_tokens":0}}`,
			`message_stop {"type":"message_stop"}`,
		}},
		{"error_chunk_adds_nothing", []request.Chunk{{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassInternal, "x")}}, nil},
		{"early_usage_reaches_message_start", []request.Chunk{{Kind: request.ChunkDelta, Content: "x", Usage: &request.Usage{PromptTokens: 9, CompletionTokens: 1}}}, []string{
			`message_start {"type":"message_start","message":{"id":"msg_abc","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":0}}}`, ping,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(meta)
			var events []Event
			for _, c := range tt.chunks {
				events = append(events, s.Encode(c)...)
			}
			got := wire(t, events)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	t.Run("start_before_first_chunk", func(t *testing.T) {
		s := NewStream(meta)
		if got := wire(t, s.Start(nil)); len(got) != 2 || got[0] != start || got[1] != ping {
			t.Fatalf("Start: %q", got)
		}
		if again := s.Start(nil); again != nil {
			t.Fatalf("a second Start returned %v", again)
		}
		got := wire(t, s.Encode(done(request.FinishStop, 1, 0)))
		if len(got) != 2 || !strings.HasPrefix(got[0], "message_delta ") || !strings.HasPrefix(got[1], "message_stop ") {
			t.Fatalf("after Start, done encodes as %q", got)
		}
	})
}

// TestStreamMatchesAccumulator checks that a streamed answer, assembled
// the way a client does, equals the non-streamed one for the same chunks.
func TestStreamMatchesAccumulator(t *testing.T) {
	chunks := []request.Chunk{
		delta("", "r1"), delta("t1", "r2"), delta("t2", ""), call("x", "f", `{"a":[1,2]}`),
		delta("after", ""), call("y", "g", `{}`), done(request.FinishStop, 3, 8),
	}
	a, s := NewAccumulator(meta), NewStream(meta)
	var msg Message
	for _, c := range chunks {
		a.Add(c)
		for _, ev := range s.Encode(c) {
			switch d := ev.Data.(type) {
			case MessageStart:
				msg = d.Message
			case ContentBlockStart:
				if d.Index != len(msg.Content) {
					t.Fatalf("block %d starts at index %d", len(msg.Content), d.Index)
				}
				b := d.ContentBlock
				b.Input = ""
				msg.Content = append(msg.Content, b)
			case ContentBlockDelta:
				b := &msg.Content[d.Index]
				if d.Delta.Type == DeltaInputJSON {
					b.Input += d.Delta.Text
				} else {
					b.Text += d.Delta.Text
				}
			case MessageDelta:
				reason := d.Delta.StopReason
				msg.StopReason, msg.StopSequence = &reason, d.Delta.StopSequence
				msg.Usage = Usage{InputTokens: d.Usage.InputTokens, OutputTokens: d.Usage.OutputTokens}
			}
		}
	}
	if got, want := mustJSON(t, msg), mustJSON(t, a.Result()); got != want {
		t.Fatalf("streamed:\n%s\nwhole:\n%s", got, want)
	}
}

func TestErrorFrom(t *testing.T) {
	tests := []struct {
		status int
		class  fault.Class
		typ    string
	}{
		{400, fault.ClassInvalid, "invalid_request_error"},
		{401, fault.ClassAuth, "authentication_error"},
		{403, fault.ClassInvalid, "permission_error"},
		{404, fault.ClassNotFound, "not_found_error"},
		{405, fault.ClassInvalid, "invalid_request_error"},
		{409, fault.ClassConflict, "invalid_request_error"},
		{413, fault.ClassTooLarge, "request_too_large"},
		{429, fault.ClassInvalid, "overloaded_error"},
		{499, fault.ClassCancelled, "api_error"},
		{500, fault.ClassInternal, "api_error"},
		{503, fault.ClassUnavailable, "overloaded_error"},
		{504, fault.ClassUnavailable, "timeout_error"},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			got := mustJSON(t, ErrorFrom(tt.status, &fault.Error{Class: tt.class, Message: `say "hi"`, Param: "p"}))
			want := `{"type":"error","error":{"type":"` + tt.typ + `","message":"say \"hi\""}}`
			if got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		})
	}
}

// TestImports enforces that the translator stays pure: no net/http, no
// clock, no randomness (a wire-format adapter imports no net/http).
func TestImports(t *testing.T) {
	forbidden := []string{"net", "net/http", "time", "math/rand", "math/rand/v2", "crypto/rand", "os"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad {
					t.Errorf("%s imports %s: the translator must stay pure", name, path)
				}
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
