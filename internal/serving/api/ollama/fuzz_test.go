package ollama

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

// fuzzSeeds are request bodies for every decoder; `go test` runs them as
// ordinary tests.
var fuzzSeeds = []string{
	``, `null`, `[]`, `{}`, `{"model":`, `"x"`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1}"}}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`,
	`{"model":"m","messages":[],"keep_alive":0}`,
	`{"model":"m","prompt":"p","system":"s","format":{"type":"object"},"think":"high","options":{"num_predict":-2,"seed":-1,"top_k":40.0,"stop":"x"}}`,
	`{"model":"m","prompt":"p","raw":true,"options":{"temperature":1e400}}`,
	`{"model":"m","prompt":"p","options":{"num_predict":9223372036854775808,"top_k":-0.0,"mirostat":1e20}}`,
	`{"model":"m","input":["a","b"],"dimensions":3}`,
	`{"model":"m","prompt":"p","stream":false,"logprobs":true,"top_logprobs":5}`,
}

// FuzzDecode checks that no body makes a decoder panic, and that every
// refusal is an invalid-request *fault.Error: a client never sees a 500 for
// its own bad input (an embedding request with too much text is too
// large). A chat request that decodes must also validate.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := DecodeChatRequest(body)
		checkRefusal(t, "chat", err)
		if err == nil && !d.Load {
			if err := d.Request.Validate(); err != nil {
				t.Fatalf("chat decoded a request that does not validate: %v", err)
			}
		}
		_, err = DecodeGenerateRequest(body)
		checkRefusal(t, "generate", err)
		_, err = DecodeEmbedRequest(body)
		checkRefusal(t, "embed", err)
		_, err = DecodeEmbeddingsRequest(body)
		checkRefusal(t, "embeddings", err)
		_, err = DecodeShowRequest(body)
		checkRefusal(t, "show", err)
		// The model documents come from the node, but must not panic on
		// anything either.
		_, _ = ParseCatalog(body)
		_, _ = ParseInstances(body)
	})
}

func checkRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	e, ok := errors.AsType[*fault.Error](err)
	if !ok || (e.Class != fault.ClassInvalid && e.Class != fault.ClassTooLarge) {
		t.Fatalf("%s: refusal %v (%T) is not an invalid-request or too-large *fault.Error", what, err, err)
	}
}

// FuzzEncode checks that every chunk, however odd, encodes to valid JSON
// lines without a panic.
func FuzzEncode(f *testing.F) {
	f.Add("delta", "text", "", "", "", "stop")
	f.Add("tool_call", "", "", "f", "not json", "tool_calls")
	f.Add("done", "", "\xff", "", "{}", "length")
	f.Fuzz(func(t *testing.T, kind, content, reasoning, name, args, finish string) {
		c := request.Chunk{Kind: request.ChunkKind(kind), Content: content, Reasoning: reasoning, FinishReason: finish}
		if name != "" {
			c.ToolCall = &request.ToolCall{Name: name, Arguments: args}
		}
		for _, l := range NewChatStream("m", t0).Encode(c, t0) {
			if b, err := json.Marshal(l); err != nil || !json.Valid(b) {
				t.Fatalf("chat line %s: %v", b, err)
			}
		}
		for _, l := range NewGenerateStream("m", t0).Encode(c, t0) {
			if b, err := json.Marshal(l); err != nil || !json.Valid(b) {
				t.Fatalf("generate line %s: %v", b, err)
			}
		}
	})
}
