package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skulk/skulk/internal/engine/grammar"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// Schemas the structured-output tests generate with. A bounded schema
// limits every string, array and number it admits (maxLength, maxItems,
// enum, boolean), so generation must reach the end of the value; in an
// unbounded one a story model that never closes a string or stops writing
// digits may run to max_tokens. json_object never completes on
// stories260K: after a value the model always prefers ',' to '}' (none of
// 60 answers at temperatures 0 to 2, top_p 1, ended), so only its
// prefix property is tested here; the bounded schemas test the end.
var testSchemas = []struct {
	name    string
	schema  string
	bounded bool
}{
	{name: "json_object", schema: `{}`},
	{name: "pet", bounded: true, schema: `{"type":"object","properties":{
		"name":{"type":"string","maxLength":12},
		"mood":{"enum":["happy","sad","angry"]},
		"ok":{"type":"boolean"},
		"friends":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":3},
		"tags":{"type":"array","items":{"enum":["a","b"]},"minItems":1,"maxItems":4},
		"note":{"type":["string","null"],"maxLength":6},
		"kind":{"type":"object","properties":{"species":{"enum":["cat","dog"]},"legs":{"enum":[2,4]}},
			"required":["species","legs"],"additionalProperties":false}},
		"required":["name","mood","ok","friends","tags","note","kind"],"additionalProperties":false}`},
	{name: "person", schema: `{"type":"object","properties":{
		"name":{"type":"string","maxLength":12},
		"age":{"type":"integer"},
		"height":{"type":"number"},
		"mood":{"enum":["happy","sad","angry"]}},
		"required":["name","age","height","mood"],"additionalProperties":false}`},
	{name: "nested", schema: `{"type":"object","properties":{
		"story":{"type":"object","properties":{
			"title":{"type":"string","minLength":1,"maxLength":10},
			"lines":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2}},
			"required":["title","lines"],"additionalProperties":false}},
		"required":["story"],"additionalProperties":false}`},
}

// TestJSONSchemaOutput generates under each schema, greedily and at
// temperature 1 with several seeds, as a raw completion and as a chat.
// stories260K writes stories, never JSON: the output is JSON only because
// the mask makes it so. Every answer that ends with finish_reason "stop"
// parses and validates against its schema; one that ends with "length" is
// an unfinished prefix of a matching document (for json_object: of an
// object, not any value). A bounded schema always ends with "stop".
func TestJSONSchemaOutput(t *testing.T) {
	c := loadedClient(t, proto.LoadSpec{})
	for _, sc := range testSchemas {
		t.Run(sc.name, func(t *testing.T) {
			schema := sc.schema
			if schema == `{}` {
				schema = `{"type":"object"}`
			}
			m, err := grammar.Compile([]byte(schema))
			if err != nil {
				t.Fatal(err)
			}
			stops, runs := 0, 0
			for _, temp := range []float64{0, 1} {
				seeds := []uint64{1}
				if temp > 0 {
					seeds = []uint64{1, 2, 3, 4, 5, 6, 7, 8}
				}
				for _, seed := range seeds {
					for _, isChat := range []bool{false, true} {
						req := structuredRequest(isChat, temp, seed, 200)
						req.JSONSchema = json.RawMessage(sc.schema)
						r := generateAll(t, c, fmt.Sprintf("%s-%v-%d-%v", sc.name, temp, seed, isChat), req)
						where := fmt.Sprintf("temperature %v seed %d chat %v: %q", temp, seed, isChat, r.content)
						if r.last.Kind != request.ChunkDone || len(r.calls) > 0 || r.reasoning != "" {
							t.Fatalf("%s: last chunk %+v, calls %+v, reasoning %q", where, r.last, r.calls, r.reasoning)
						}
						runs++
						switch r.last.FinishReason {
						case request.FinishStop:
							stops++
							if err := validateJSON(schema, r.content); err != nil {
								t.Fatalf("%s: %v", where, err)
							}
						case request.FinishLength:
							if ok, complete := m.Prefix([]byte(r.content)); !ok || complete || sc.bounded {
								t.Fatalf("%s: finish_reason length (bounded schema %v), prefix %v, complete %v", where, sc.bounded, ok, complete)
							}
						default:
							t.Fatalf("%s: finish_reason %q", where, r.last.FinishReason)
						}
						if temp == 0 && !isChat {
							t.Logf("greedy (%s): %s", r.last.FinishReason, r.content)
						}
						if temp == 1 && seed == 1 && isChat {
							t.Logf("chat, temperature 1 (%s): %s", r.last.FinishReason, r.content)
						}
					}
				}
			}
			t.Logf("%d of %d answers complete", stops, runs)
		})
	}
}

// TestJSONSchemaLength: when max_tokens runs out before the value is
// complete, the finish_reason is "length" and the content is a prefix of a
// matching document, but not one; when the last token allowed completes
// it, "stop".
func TestJSONSchemaLength(t *testing.T) {
	c := loadedClient(t, proto.LoadSpec{})
	schema := testSchemas[1].schema // bounded: it ends with "stop" given room
	req := structuredRequest(false, 0, 1, 5)
	req.JSONSchema = json.RawMessage(schema)
	r := generateAll(t, c, "short", req)
	if r.last.FinishReason != request.FinishLength || r.last.Usage.CompletionTokens != 5 {
		t.Fatalf("last chunk %+v, want finish_reason length after 5 tokens", r.last)
	}
	m, err := grammar.Compile([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	if ok, complete := m.Prefix([]byte(r.content)); !ok || complete {
		t.Fatalf("content %q: prefix %v complete %v, want an incomplete prefix", r.content, ok, complete)
	}
	// A value completed by the last token max_tokens allows is "stop"; one
	// token fewer is "length".
	req = structuredRequest(false, 0, 1, 200)
	req.JSONSchema = json.RawMessage(schema)
	full := generateAll(t, c, "full", req)
	n := full.last.Usage.CompletionTokens
	if full.last.FinishReason != request.FinishStop {
		t.Fatalf("with room: %+v", full.last)
	}
	for _, tt := range []struct {
		max    int
		finish string
	}{{n, request.FinishStop}, {n - 1, request.FinishLength}} {
		req.Sampling.MaxTokens = tt.max
		r := generateAll(t, c, fmt.Sprint("exact-", tt.max), req)
		if r.last.FinishReason != tt.finish || !strings.HasPrefix(full.content, r.content) {
			t.Fatalf("max_tokens %d of %d: finish %q content %q, want %q and a prefix of %q", tt.max, n, r.last.FinishReason, r.content, tt.finish, full.content)
		}
	}
	// Stop sequences do not cut a constrained answer.
	req = structuredRequest(false, 0, 1, 256)
	req.JSONSchema = json.RawMessage(schema)
	req.Sampling.Stop = []string{`"`, "{"}
	r = generateAll(t, c, "stop", req)
	if r.last.FinishReason != request.FinishStop {
		t.Fatalf("with stop sequences: %+v", r.last)
	}
	if err := validateJSON(schema, r.content); err != nil {
		t.Fatalf("with stop sequences: %v", err)
	}
}

// weatherTools are the tools of the forced-call tests: one with a full
// parameters schema, one without parameters (so its arguments are {}), one
// whose schema uses $ref.
var weatherTools = []request.Tool{
	{Name: "get_weather", Description: "Weather in a city", Parameters: json.RawMessage(`{"type":"object","properties":{
		"city":{"type":"string","maxLength":10},"unit":{"enum":["celsius","fahrenheit"]}},
		"required":["city","unit"],"additionalProperties":false}`)},
	{Name: "get_time"},
	{Name: "lookup", Parameters: json.RawMessage(`{"$defs":{"q":{"type":"string","maxLength":4}},"type":"object",
		"properties":{"q":{"$ref":"#/$defs/q"}},"required":["q"],"additionalProperties":false}`)},
}

// argsSchemaFor is the schema a tool call's arguments are checked with in
// the tests: the $ref tool's is inlined by hand.
func argsSchemaFor(t *testing.T, name string) string {
	switch name {
	case "get_weather":
		return string(weatherTools[0].Parameters)
	case "get_time":
		return `{"type":"object","additionalProperties":false}`
	case "lookup":
		return `{"type":"object","properties":{"q":{"type":"string","maxLength":4}},"required":["q"],"additionalProperties":false}`
	}
	t.Fatalf("unknown tool %q", name)
	return ""
}

// llama3Template is enough of a Llama 3 template to select its dialect,
// whose calls carry "parameters" rather than "arguments".
const llama3Template = `{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>

{{ m.content }}<|eot_id|>{% endfor %}<|start_header_id|>assistant<|end_header_id|>

`

// TestForcedToolCall: tool_choice "required" and a named function always
// yield exactly one tool call, to an offered tool (the named one), with
// arguments that are a JSON object matching the tool's schema, and
// finish_reason "tool_calls", on a model that knows nothing of tools, in
// the Hermes, harmony (gpt-oss), Llama 3 and no-dialect (ChatML fallback)
// families.
func TestForcedToolCall(t *testing.T) {
	qwen, err := os.ReadFile(filepath.Join("..", "..", "engine", "chat", "testdata", "Qwen-Qwen2.5-7B-Instruct.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	harmony, err := os.ReadFile(filepath.Join("..", "..", "engine", "chat", "testdata", "moe", "openai-gpt-oss-120b.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	templates := []struct {
		name     string
		override string
	}{
		{name: "hermes", override: string(qwen)},
		{name: "harmony", override: string(harmony)},
		{name: "llama3", override: llama3Template},
		{name: "fallback"},
	}
	choices := []struct {
		name   string
		choice request.ToolChoice
		allow  []string
	}{
		{name: "required", choice: request.ToolChoice{Mode: "required"}, allow: []string{"get_weather", "get_time", "lookup"}},
		{name: "named", choice: request.ToolChoice{Mode: "function", Name: "get_weather"}, allow: []string{"get_weather"}},
		{name: "named_ref", choice: request.ToolChoice{Mode: "function", Name: "lookup"}, allow: []string{"lookup"}},
		{name: "named_no_parameters", choice: request.ToolChoice{Mode: "function", Name: "get_time"}, allow: []string{"get_time"}},
	}
	for _, tm := range templates {
		t.Run(tm.name, func(t *testing.T) {
			c := loadedClient(t, proto.LoadSpec{ChatTemplateOverride: tm.override})
			seen := map[string]bool{}
			for _, ch := range choices {
				for _, temp := range []float64{0, 1} {
					seeds := []uint64{1}
					if temp > 0 {
						seeds = []uint64{1, 2, 3, 4}
					}
					for _, seed := range seeds {
						req := structuredRequest(true, temp, seed, 256)
						req.Tools, req.ToolChoice = weatherTools, ch.choice
						r := generateAll(t, c, fmt.Sprintf("%s-%v-%d", ch.name, temp, seed), req)
						where := fmt.Sprintf("%s temperature %v seed %d", ch.name, temp, seed)
						if r.last.Kind != request.ChunkDone || r.last.FinishReason != request.FinishToolCalls {
							t.Fatalf("%s: last chunk %+v, want done with finish_reason tool_calls", where, r.last)
						}
						if len(r.calls) != 1 || r.content != "" {
							t.Fatalf("%s: calls %+v content %q, want one call and no content", where, r.calls, r.content)
						}
						call := r.calls[0]
						if !slices.Contains(ch.allow, call.Name) || call.ID == "" {
							t.Fatalf("%s: call %+v, want one of %v", where, call, ch.allow)
						}
						if err := validateJSON(argsSchemaFor(t, call.Name), call.Arguments); err != nil {
							t.Fatalf("%s: arguments of %+v: %v", where, call, err)
						}
						seen[call.Name] = true
						if temp == 0 && ch.name == "named" {
							t.Logf("greedy named call: %s(%s)", call.Name, call.Arguments)
						}
					}
				}
			}
			t.Logf("tools called: %v", seen)
		})
	}
}

// TestToolChoiceNone: with tool_choice "none" the template is not told
// about the tools (the prompt is as long as with no tools at all), and
// text that looks like a call stays text.
func TestToolChoiceNone(t *testing.T) {
	qwen, err := os.ReadFile(filepath.Join("..", "..", "engine", "chat", "testdata", "Qwen-Qwen2.5-7B-Instruct.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	c := loadedClient(t, proto.LoadSpec{ChatTemplateOverride: string(qwen)})
	count := func(tools []request.Tool, mode string) int {
		req := structuredRequest(true, 0, 1, 8)
		req.Tools, req.ToolChoice, req.CountOnly = tools, request.ToolChoice{Mode: mode}, true
		r := generateAll(t, c, "count-"+mode+fmt.Sprint(len(tools)), req)
		if r.last.Kind != request.ChunkDone {
			t.Fatalf("count with %d tools, mode %q: %+v", len(tools), mode, r.last)
		}
		return r.last.Usage.PromptTokens
	}
	bare, none, auto := count(nil, ""), count(weatherTools, "none"), count(weatherTools, "auto")
	if none != bare || auto <= bare {
		t.Fatalf("prompt tokens: no tools %d, tool_choice none %d, auto %d; want none == no tools < auto", bare, none, auto)
	}
	// A JSON schema that spells out a Hermes call: with tool_choice none it
	// is content, not a call.
	req := structuredRequest(true, 0, 1, 64)
	req.Tools, req.ToolChoice = weatherTools, request.ToolChoice{Mode: "none"}
	req.JSONSchema = json.RawMessage(`{"const":{"name":"get_time","arguments":{}}}`)
	r := generateAll(t, c, "none-json", req)
	if r.last.FinishReason != request.FinishStop || len(r.calls) != 0 || r.content != `{"arguments":{},"name":"get_time"}` {
		t.Fatalf("finish %q calls %+v content %q", r.last.FinishReason, r.calls, r.content)
	}
}

// TestStructuredErrors: schemas and tool choices the runner refuses are
// invalid_request errors on the right parameter, naming the problem.
func TestStructuredErrors(t *testing.T) {
	c := loadedClient(t, proto.LoadSpec{})
	tests := []struct {
		name    string
		edit    func(r *request.Request)
		param   string
		message string
	}{
		{name: "schema_not_a_schema", edit: func(r *request.Request) { r.JSONSchema = json.RawMessage(`[1]`) }, param: "json_schema", message: "invalid schema"},
		{name: "schema_unsupported", edit: func(r *request.Request) {
			r.JSONSchema = json.RawMessage(`{"type":"string","pattern":"^a+$"}`)
		}, param: "json_schema", message: "pattern"},
		{name: "schema_unsatisfiable", edit: func(r *request.Request) { r.JSONSchema = json.RawMessage(`{"enum":[]}`) }, param: "json_schema", message: "unsatisfiable"},
		{name: "schema_bad_type", edit: func(r *request.Request) { r.JSONSchema = json.RawMessage(`{"type":"bogus"}`) }, param: "json_schema", message: "bogus"},
		{name: "required_without_tools", edit: func(r *request.Request) { r.ToolChoice.Mode = "required" }, param: "tool_choice", message: "at least one tool"},
		{name: "unknown_function", edit: func(r *request.Request) {
			r.Tools, r.ToolChoice = weatherTools, request.ToolChoice{Mode: "function", Name: "nope"}
		}, param: "tool_choice", message: `"nope"`},
		{name: "unknown_mode", edit: func(r *request.Request) { r.Tools, r.ToolChoice.Mode = weatherTools, "always" }, param: "tool_choice", message: "always"},
		{name: "required_raw_completion", edit: func(r *request.Request) {
			r.Chat, r.Messages, r.Prompt = false, nil, "Once"
			r.Tools, r.ToolChoice.Mode = weatherTools, "required"
		}, param: "tool_choice", message: "chat"},
		{name: "tool_schema_invalid", edit: func(r *request.Request) {
			r.Tools = []request.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","required":"x"}`)}}
			r.ToolChoice.Mode = "required"
		}, param: "tools", message: "tools[0] (f)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := structuredRequest(true, 0, 1, 8)
			tt.edit(&req)
			r := generateAll(t, c, tt.name, req)
			if len(r.chunks) != 1 || r.last.Kind != request.ChunkError {
				t.Fatalf("chunks %+v, want one error chunk", r.chunks)
			}
			e := r.last.Error
			if e.Class != fault.ClassInvalid || e.Param != tt.param || !strings.Contains(e.Message, tt.message) {
				t.Fatalf("error %+v, want invalid_request on %q mentioning %q", e, tt.param, tt.message)
			}
		})
	}
}

// BenchmarkConstrainedDecode measures generation on stories260K with and
// without a grammar, in the runner's own loop: tok/s, and the masking
// overhead per token as the difference of ns/token.
func BenchmarkConstrainedDecode(b *testing.B) {
	l, err := openModel(proto.LoadSpec{ModelPath: modelPath(b), Threads: 1}, serving{slots: 1}, testLogger(), func() {})
	if err != nil {
		b.Fatal(err)
	}
	defer l.m.Close()
	cases := []struct {
		name   string
		schema string
	}{
		{name: "free"},
		{name: "json_object", schema: `{}`},
		{name: "schema", schema: testSchemas[1].schema},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			tokens := 0
			for i := range b.N {
				req := structuredRequest(false, 1, uint64(i), 128)
				req.JSONSchema = json.RawMessage(bc.schema)
				end, err := generate(context.Background(), l, req, func(request.Chunk) {})
				if err != nil {
					b.Fatal(err)
				}
				tokens += end.usage.CompletionTokens
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(tokens)/sec, "tok/s")
			b.ReportMetric(sec*1e9/float64(tokens), "ns/token")
		})
	}
}

// structuredRequest is a request on stories260K, raw or chat.
func structuredRequest(isChat bool, temp float64, seed uint64, maxTokens int) request.Request {
	r := request.Request{Prompt: "Once upon a time", Sampling: request.Sampling{MaxTokens: maxTokens, Temperature: &temp, Seed: &seed}}
	if isChat {
		r.Prompt, r.Chat = "", true
		r.Messages = []request.Message{{Role: request.RoleUser, Content: "Tell me about Lily as JSON."}}
	}
	return r
}

// validateJSON parses text as one JSON value and validates it against
// schema, for the subset of JSON Schema these tests use: type, enum, const,
// properties, required, additionalProperties false, items, minItems,
// maxItems, minLength, maxLength. It shares no code with package grammar.
func validateJSON(schema, text string) error {
	var s any
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return fmt.Errorf("schema: %v", err)
	}
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("not JSON: data after the value")
	}
	return validateValue(s.(map[string]any), v, "$")
}

func validateValue(s map[string]any, v any, at string) error {
	if t, ok := s["type"]; ok {
		var types []any
		if ts, ok := t.([]any); ok {
			types = ts
		} else {
			types = []any{t}
		}
		if !slices.ContainsFunc(types, func(t any) bool { return jsonType(v, t.(string)) }) {
			return fmt.Errorf("%s: %#v is not of type %v", at, v, t)
		}
	}
	if e, ok := s["enum"]; ok && !slices.ContainsFunc(e.([]any), func(x any) bool { return sameJSON(x, v) }) {
		return fmt.Errorf("%s: %#v is not in the enum %v", at, v, e)
	}
	if c, ok := s["const"]; ok && !sameJSON(c, v) {
		return fmt.Errorf("%s: %#v is not the const %v", at, v, c)
	}
	switch v := v.(type) {
	case string:
		n := float64(utf8.RuneCountInString(v))
		if m, ok := s["maxLength"].(float64); ok && n > m {
			return fmt.Errorf("%s: %q is longer than %v", at, v, m)
		}
		if m, ok := s["minLength"].(float64); ok && n < m {
			return fmt.Errorf("%s: %q is shorter than %v", at, v, m)
		}
	case []any:
		n := float64(len(v))
		if m, ok := s["maxItems"].(float64); ok && n > m {
			return fmt.Errorf("%s: %d items, more than %v", at, len(v), m)
		}
		if m, ok := s["minItems"].(float64); ok && n < m {
			return fmt.Errorf("%s: %d items, fewer than %v", at, len(v), m)
		}
		if items, ok := s["items"].(map[string]any); ok {
			for i, x := range v {
				if err := validateValue(items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, k := range req {
				if _, ok := v[k.(string)]; !ok {
					return fmt.Errorf("%s: the required property %q is missing", at, k)
				}
			}
		}
		for k, x := range v {
			ps, declared := props[k].(map[string]any)
			if !declared {
				if s["additionalProperties"] == false {
					return fmt.Errorf("%s: the property %q is not allowed", at, k)
				}
				continue
			}
			if err := validateValue(ps, x, at+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

func jsonType(v any, t string) bool {
	switch v := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	case json.Number:
		if t == "number" {
			return true
		}
		return t == "integer" && !strings.ContainsAny(v.String(), ".eE")
	}
	return false
}

// sameJSON compares two decoded values by their canonical encoding (the
// schema's numbers are float64, the value's json.Number).
func sameJSON(a, b any) bool {
	ea, err1 := json.Marshal(a)
	eb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}
