package openai

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

var meta = Meta{ID: "chatcmpl-1", Model: "m", Created: 1700000000}

// marshalAll renders objects as the JSON lines a client would see.
func marshalAll[T any](t *testing.T, objs []T) []string {
	t.Helper()
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func checkLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestChatStream(t *testing.T) {
	const head = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":`
	tests := []struct {
		name   string
		usage  bool
		chunks []request.Chunk
		want   []string
	}{
		{
			name:  "content_then_usage",
			usage: true,
			chunks: []request.Chunk{
				{Kind: request.ChunkDelta, Reasoning: "hmm"},
				{Kind: request.ChunkDelta, Content: "Hel"},
				{Kind: request.ChunkDelta},
				{Kind: request.ChunkDelta, Content: "lo"},
				{Kind: request.ChunkDone, FinishReason: request.FinishLength, Usage: &request.Usage{PromptTokens: 3, CompletionTokens: 2}},
			},
			want: []string{
				head + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				head + `[{"index":0,"delta":{"reasoning_content":"hmm"},"logprobs":null,"finish_reason":null}]}`,
				head + `[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}]}`,
				head + `[{"index":0,"delta":{"content":"lo"},"logprobs":null,"finish_reason":null}]}`,
				head + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}`,
				head + `[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
			},
		},
		{
			name: "tool_calls_without_usage",
			chunks: []request.Chunk{
				{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: "a", Name: "f", Arguments: `{"x":1}`}},
				{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: "b", Name: "g", Arguments: `{}`}},
				{Kind: request.ChunkDone, FinishReason: request.FinishStop},
			},
			want: []string{
				head + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				head + `[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},"logprobs":null,"finish_reason":null}]}`,
				head + `[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},"logprobs":null,"finish_reason":null}]}`,
				head + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}`,
			},
		},
		{
			name: "logprobs",
			chunks: []request.Chunk{
				{Kind: request.ChunkDelta, Content: "é", Logprobs: []request.TokenLogprob{{Token: "é", Logprob: -0.5, Top: []request.TopLogprob{{Token: "e", Logprob: -1}}}}},
				{Kind: request.ChunkDone, FinishReason: request.FinishCancelled},
			},
			want: []string{
				head + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				head + `[{"index":0,"delta":{"content":"é"},"logprobs":{"content":[{"token":"é","logprob":-0.5,"bytes":[195,169],"top_logprobs":[{"token":"e","logprob":-1,"bytes":[101]}]}]},"finish_reason":null}]}`,
				head + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
			},
		},
		{
			name:   "error_chunk_encodes_nothing_and_done_without_usage_counts_zero",
			usage:  true,
			chunks: []request.Chunk{{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassInternal, "x")}, {Kind: request.ChunkDone}},
			want: []string{
				head + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				head + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
				head + `[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewChatStream(meta, tt.usage)
			var got []string
			for _, c := range tt.chunks {
				got = append(got, marshalAll(t, s.Encode(c))...)
			}
			checkLines(t, got, tt.want)
		})
	}
}

func TestChatAccumulator(t *testing.T) {
	tests := []struct {
		name   string
		chunks []request.Chunk
		want   string
	}{
		{
			name: "content_reasoning_usage",
			chunks: []request.Chunk{
				{Kind: request.ChunkDelta, Reasoning: "think "},
				{Kind: request.ChunkDelta, Reasoning: "more", Content: "Hel"},
				{Kind: request.ChunkDelta, Content: "lo"},
				{Kind: request.ChunkDone, FinishReason: request.FinishStop, Usage: &request.Usage{PromptTokens: 4, CompletionTokens: 3}},
			},
			want: `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello","reasoning_content":"think more"},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":3,"total_tokens":7}}`,
		},
		{
			name: "tool_call_only_has_null_content",
			chunks: []request.Chunk{
				{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: "a", Name: "f", Arguments: `{}`}},
				{Kind: request.ChunkDone, FinishReason: request.FinishToolCalls},
			},
			want: `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
		},
		{
			name: "empty_answer_and_logprobs",
			chunks: []request.Chunk{
				{Kind: request.ChunkDelta, Logprobs: []request.TokenLogprob{{Token: "", Logprob: -2}}},
				{Kind: request.ChunkDone, FinishReason: request.FinishLength},
			},
			want: `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"logprobs":{"content":[{"token":"","logprob":-2,"bytes":[],"top_logprobs":[]}]},"finish_reason":"length"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewChatAccumulator(meta)
			for _, c := range tt.chunks {
				a.Add(c)
			}
			checkLines(t, marshalAll(t, []ChatCompletion{a.Result()}), []string{tt.want})
		})
	}
}

func TestCompletionStreamAndAccumulator(t *testing.T) {
	m := Meta{ID: "cmpl-1", Model: "m", Created: 5}
	chunks := []request.Chunk{
		{Kind: request.ChunkDelta, Content: "ab", Logprobs: []request.TokenLogprob{{Token: "a", Logprob: -1}, {Token: "b", Logprob: -2, Top: []request.TopLogprob{{Token: "c", Logprob: -3}}}}},
		{Kind: request.ChunkDelta, Reasoning: "dropped"},
		{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{Name: "dropped"}},
		{Kind: request.ChunkDelta, Content: "c", Logprobs: []request.TokenLogprob{{Token: "c", Logprob: -0.25}}},
		{Kind: request.ChunkDone, FinishReason: request.FinishLength, Usage: &request.Usage{PromptTokens: 1, CompletionTokens: 3}},
	}
	const head = `{"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":`
	s := NewCompletionStream(m, true)
	a := NewCompletionAccumulator(m)
	var got []string
	for _, c := range chunks {
		got = append(got, marshalAll(t, s.Encode(c))...)
		a.Add(c)
	}
	checkLines(t, got, []string{
		head + `[{"text":"ab","index":0,"logprobs":{"tokens":["a","b"],"token_logprobs":[-1,-2],"top_logprobs":[{},{"c":-3}],"text_offset":[0,1]},"finish_reason":null}]}`,
		head + `[{"text":"c","index":0,"logprobs":{"tokens":["c"],"token_logprobs":[-0.25],"top_logprobs":[{}],"text_offset":[2]},"finish_reason":null}]}`,
		head + `[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}]}`,
		head + `[],"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}}`,
	})
	checkLines(t, marshalAll(t, []TextCompletion{a.Result()}), []string{
		head + `[{"text":"abc","index":0,"logprobs":{"tokens":["a","b","c"],"token_logprobs":[-1,-2,-0.25],"top_logprobs":[{},{"c":-3},{}],"text_offset":[0,1,2]},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}}`,
	})
}

func TestErrorFrom(t *testing.T) {
	tests := []struct {
		name string
		err  *fault.Error
		want string
	}{
		{"invalid_with_param", fault.ParamErrorf("n", "n must be 1"), `{"error":{"message":"n must be 1","type":"invalid_request_error","param":"n","code":null}}`},
		{"auth", fault.Errorf(fault.ClassAuth, "no key"), `{"error":{"message":"no key","type":"authentication_error","param":null,"code":"invalid_api_key"}}`},
		{"model_not_found", &fault.Error{Class: fault.ClassNotFound, Param: "model", Message: "place it"}, `{"error":{"message":"place it","type":"not_found_error","param":"model","code":"model_not_found"}}`},
		{"not_found", fault.Errorf(fault.ClassNotFound, "no route"), `{"error":{"message":"no route","type":"not_found_error","param":null,"code":"not_found"}}`},
		{"too_large", fault.Errorf(fault.ClassTooLarge, "big"), `{"error":{"message":"big","type":"invalid_request_error","param":null,"code":"request_too_large"}}`},
		{"unavailable", fault.Errorf(fault.ClassUnavailable, "later"), `{"error":{"message":"later","type":"service_unavailable_error","param":null,"code":"unavailable"}}`},
		{"internal", fault.Errorf(fault.ClassInternal, "bug"), `{"error":{"message":"bug","type":"server_error","param":null,"code":"internal_error"}}`},
		{"unknown_class", &fault.Error{Class: "weird", Message: "?"}, `{"error":{"message":"?","type":"server_error","param":null,"code":"internal_error"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLines(t, marshalAll(t, []ErrorResponse{ErrorFrom(tt.err)}), []string{tt.want})
		})
	}
}

func TestNewModelList(t *testing.T) {
	checkLines(t, marshalAll(t, []ModelList{NewModelList(nil), NewModelList([]Model{{ID: "a", Created: 1, OwnedBy: "skulk"}})}), []string{
		`{"object":"list","data":[]}`,
		`{"object":"list","data":[{"id":"a","object":"model","created":1,"owned_by":"skulk"}]}`,
	})
}

// TestImports enforces that the translators stay pure: no net/http, no
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
					t.Errorf("%s imports %s: the translators must stay pure", name, path)
				}
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
