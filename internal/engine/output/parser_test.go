package output

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func mustParser(t testing.TB, cfg Config) *Parser {
	t.Helper()
	p, err := NewParser(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// parseChunks feeds text in chunks of size n (0 = whole) and returns the
// coalesced events.
func parseChunks(t testing.TB, cfg Config, text string, n int) []Event {
	t.Helper()
	p := mustParser(t, cfg)
	var evs []Event
	if n <= 0 {
		evs = append(evs, p.Push(text)...)
	} else {
		for i := 0; i < len(text); i += n {
			evs = append(evs, p.Push(text[i:min(i+n, len(text))])...)
		}
	}
	evs = append(evs, p.Close()...)
	return Coalesce(evs)
}

// checkChunkings asserts that every chunking gives the whole-string result,
// and returns that result.
func checkChunkings(t testing.TB, cfg Config, text string) []Event {
	t.Helper()
	whole := parseChunks(t, cfg, text, 0)
	for _, n := range []int{1, 2, 3, 7} {
		if got := parseChunks(t, cfg, text, n); !reflect.DeepEqual(got, whole) {
			t.Fatalf("chunks of %d bytes:\n got %#v\nwant %#v (whole string)", n, got, whole)
		}
	}
	return whole
}

func content(s string) Event   { return Event{Kind: Content, Text: s} }
func reasoning(s string) Event { return Event{Kind: Reasoning, Text: s} }
func call(i int, name, args string) Event {
	return Event{Kind: Call, ToolCall: ToolCall{Index: i, ID: "call_" + strconv.Itoa(i), Name: name, Arguments: args}}
}

var weatherTools = []string{"get_weather", "search_web"}

func TestParser(t *testing.T) {
	hermes := Config{Dialect: Hermes, OfferedTools: weatherTools}
	xml := Config{Dialect: QwenXML, OfferedTools: weatherTools}
	llama := Config{Dialect: Llama3, OfferedTools: weatherTools}
	mistral := Config{Dialect: Mistral, OfferedTools: weatherTools}
	tests := []struct {
		name string
		cfg  Config
		in   string
		want []Event
	}{
		{"hermes plain content", hermes, "Hello there.", []Event{content("Hello there.")}},
		{"hermes one call", hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}\n</tool_call>",
			[]Event{call(0, "get_weather", `{"location":"Oslo"}`)}},
		{"hermes text then call", hermes, "Let me check.\n<tool_call>{\"name\":\"get_weather\",\"arguments\":{}}</tool_call>",
			[]Event{content("Let me check.\n"), call(0, "get_weather", `{}`)}},
		{"hermes two calls", hermes, "<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"a\":1}}</tool_call>\n<tool_call>{\"name\":\"search_web\",\"arguments\":{\"q\":\"x\"}}</tool_call>\n",
			[]Event{call(0, "get_weather", `{"a":1}`), call(1, "search_web", `{"q":"x"}`)}},
		{"hermes call then text", hermes, "<tool_call>{\"name\":\"get_weather\"}</tool_call>\n\nDone.",
			[]Event{call(0, "get_weather", `{}`), content("\n\nDone.")}},
		{"hermes malformed block is content", hermes, "<tool_call>{\"name\": oops}</tool_call> after",
			[]Event{content("{\"name\": oops} after")}},
		{"hermes unoffered tool is content", hermes, "<tool_call>{\"name\":\"rm_rf\",\"arguments\":{}}</tool_call>",
			[]Event{content(`{"name":"rm_rf","arguments":{}}`)}},
		{"hermes unterminated call still parses", hermes, "<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"x\":[1,2]}}",
			[]Event{call(0, "get_weather", `{"x":[1,2]}`)}},
		{"hermes unterminated garbage is content", hermes, "<tool_call>{\"name\":\"get_w",
			[]Event{content(`{"name":"get_w`)}},
		{"hermes string arguments unwrapped", hermes, `<tool_call>{"name":"get_weather","arguments":"{\"location\": \"Tokyo\"}"}</tool_call>`,
			[]Event{call(0, "get_weather", `{"location":"Tokyo"}`)}},
		{"hermes non-object arguments is content", hermes, `<tool_call>{"name":"get_weather","arguments":[1]}</tool_call>`,
			[]Event{content(`{"name":"get_weather","arguments":[1]}`)}},
		{"hermes stray markers scrubbed", hermes, "a</tool_call>b[TOOL_CALLS]c", []Event{content("abc")}},
		{"hermes accepts xml body", hermes, "<tool_call><function=get_weather><parameter=location>Oslo</parameter></function></tool_call>",
			[]Event{call(0, "get_weather", `{"location":"Oslo"}`)}},
		{"xml call with typed values", xml,
			"<tool_call>\n<function=search_web>\n<parameter=query>\nRome marathon\n</parameter>\n<parameter=max_results>\n3\n</parameter>\n<parameter=sites>\n[\"ansa.it\", \"bbc.com\"]\n</parameter>\n<parameter=note>\nline one\nline two\n</parameter>\n</function>\n</tool_call>",
			[]Event{call(0, "search_web", `{"query":"Rome marathon","max_results":3,"sites":["ansa.it","bbc.com"],"note":"line one\nline two"}`)}},
		{"xml missing parameter close is content", xml, "<tool_call><function=get_weather><parameter=location>Oslo</function></tool_call>",
			[]Event{content("<function=get_weather><parameter=location>Oslo</function>")}},
		{"xml duplicate parameter is content", xml, "<tool_call><function=get_weather><parameter=a>1</parameter><parameter=a>2</parameter></function></tool_call>",
			[]Event{content("<function=get_weather><parameter=a>1</parameter><parameter=a>2</parameter></function>")}},
		{"xml unoffered function is content", xml, "<tool_call><function=print></function></tool_call>",
			[]Event{content("<function=print></function>")}},
		{"llama bare call", llama, `{"name": "get_weather", "parameters": {"location": "Berlin"}}`,
			[]Event{call(0, "get_weather", `{"location":"Berlin"}`)}},
		{"llama leading whitespace dropped before call", llama, "\n\n  {\"name\": \"get_weather\", \"parameters\": {}}",
			[]Event{call(0, "get_weather", `{}`)}},
		{"llama python tag call", llama, `<|python_tag|>{"name": "get_weather", "parameters": {"location": "Rome"}}<|eom_id|>`,
			[]Event{call(0, "get_weather", `{"location":"Rome"}`)}},
		{"llama two calls separated by semicolon", llama, `{"name":"get_weather","parameters":{"l":"a"}}; {"name":"search_web","parameters":{"q":"b"}}`,
			[]Event{call(0, "get_weather", `{"l":"a"}`), call(1, "search_web", `{"q":"b"}`)}},
		{"llama json answer is content", llama, `{"answer": 42, "text": "}{"}`, []Event{content(`{"answer": 42, "text": "}{"}`)}},
		{"llama json mid-text is content", llama, `Sure: {"name":"get_weather","parameters":{}}`,
			[]Event{content(`Sure: {"name":"get_weather","parameters":{}}`)}},
		{"llama unoffered builtin is content", llama, `<|python_tag|>{"name": "print", "parameters": {"x": 1}}`,
			[]Event{content(`{"name": "print", "parameters": {"x": 1}}`)}},
		{"llama python tag with code is content", llama, "<|python_tag|>print(1)", []Event{content("print(1)")}},
		{"llama unbalanced json is content", llama, `{"name": "get_weather", "parameters": {`, []Event{content(`{"name": "get_weather", "parameters": {`)}},
		{"mistral array", mistral, `[TOOL_CALLS][{"name": "get_weather", "arguments": {"location": "Oslo"}, "id": "a1B2c3D4e"}, {"name": "search_web", "arguments": {"query": "q"}}]`,
			[]Event{call(0, "get_weather", `{"location":"Oslo"}`), call(1, "search_web", `{"query":"q"}`)}},
		{"mistral array with unoffered element", mistral, `[TOOL_CALLS][{"name": "get_weather", "arguments": {}}, {"name": "nope", "arguments": {}}]`,
			[]Event{call(0, "get_weather", `{}`), content(`{"name": "nope", "arguments": {}}`)}},
		{"mistral malformed array is content", mistral, `[TOOL_CALLS][{"name": get_weather}]`, []Event{content(`[{"name": get_weather}]`)}},
		{"mistral name args form", mistral, `[TOOL_CALLS]get_weather[ARGS]{"location": "Paris"}`,
			[]Event{call(0, "get_weather", `{"location":"Paris"}`)}},
		{"mistral call id form twice", mistral, `[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"location": "Oslo"}[TOOL_CALLS]search_web[CALL_ID]f5G6h7J8k[ARGS]{"query": "q"}`,
			[]Event{call(0, "get_weather", `{"location":"Oslo"}`), call(1, "search_web", `{"query":"q"}`)}},
		{"mistral unoffered name is content", mistral, `[TOOL_CALLS]rm[ARGS]{"x": 1}`, []Event{content(`rm{"x": 1}`)}},
		{"mistral marker then prose is content", mistral, "[TOOL_CALLS] hello there", []Event{content(" hello there")}},
		{"mistral name without args is content", mistral, "[TOOL_CALLS]get_weather then", []Event{content("get_weather then")}},
		{"no tools hermes block becomes content", Config{Dialect: Hermes}, "<tool_call>{\"name\":\"get_weather\"}</tool_call>",
			[]Event{content(`{"name":"get_weather"}`)}},
		{"no tools scrubs every dialect", Config{Dialect: Llama3}, "a[TOOL_CALLS]b<|python_tag|>c<|eom_id|>d[ARGS]e<tool_call>f",
			[]Event{content("abcdef")}},
		{"no tools keeps near-markers", Config{}, "<tool_cal> and [TOOL_CALL] stay", []Event{content("<tool_cal> and [TOOL_CALL] stay")}},
		{"reasoning split", Config{ReasoningEnabled: true}, "<think>\nplan it\n</think>\n\nThe answer.",
			[]Event{reasoning("plan it"), content("The answer.")}},
		{"reasoning after leading whitespace", Config{ReasoningEnabled: true}, "\n<think>a</think>b",
			[]Event{reasoning("a"), content("b")}},
		{"reasoning opened in prompt", Config{StartInReasoning: true}, "\nplan</think>\n\nanswer",
			[]Event{reasoning("plan"), content("answer")}},
		{"reasoning disabled keeps tags", Config{}, "<think>x</think>y", []Event{content("<think>x</think>y")}},
		{"think after answer text is text", Config{ReasoningEnabled: true}, "hi <think>x</think>", []Event{content("hi <think>x</think>")}},
		{"unterminated reasoning", Config{ReasoningEnabled: true}, "<think>still thinking\n", []Event{reasoning("still thinking\n")}},
		{"thinking is not think", Config{ReasoningEnabled: true}, "<thinking> hi", []Event{content("<thinking> hi")}},
		{"empty reasoning block", Config{ReasoningEnabled: true}, "<think>\n\n</think>\n\nok", []Event{content("ok")}},
		{"reasoning then call", Config{Dialect: Hermes, OfferedTools: weatherTools, ReasoningEnabled: true},
			"<think>need weather</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
			[]Event{reasoning("need weather"), call(0, "get_weather", `{}`)}},
		{"markers inside reasoning are reasoning", Config{Dialect: Hermes, OfferedTools: weatherTools, StartInReasoning: true},
			"use <tool_call> here</think>ok", []Event{reasoning("use <tool_call> here"), content("ok")}},
		// Mistral's reasoning models (Ministral 3 Reasoning, Magistral)
		// think between [THINK] and [/THINK], then answer or call.
		{"mistral think split", Config{Dialect: Mistral, ReasoningEnabled: true}, "[THINK]plan it\n[/THINK]\n\nThe answer.",
			[]Event{reasoning("plan it"), content("The answer.")}},
		{"mistral think then call", Config{Dialect: Mistral, OfferedTools: weatherTools, ReasoningEnabled: true},
			`[THINK]need weather[/THINK][TOOL_CALLS]get_weather[ARGS]{"location": "Oslo"}`,
			[]Event{reasoning("need weather"), call(0, "get_weather", `{"location":"Oslo"}`)}},
		{"mistral markers inside reasoning are reasoning", Config{Dialect: Mistral, OfferedTools: weatherTools, ReasoningEnabled: true},
			"[THINK]maybe [TOOL_CALLS] later[/THINK]ok", []Event{reasoning("maybe [TOOL_CALLS] later"), content("ok")}},
		{"mistral think closes its own tag only", Config{Dialect: Mistral, ReasoningEnabled: true}, "[THINK]a </think> b[/THINK]c",
			[]Event{reasoning("a </think> b"), content("c")}},
		{"mistral think opened in prompt", Config{Dialect: Mistral, StartInReasoning: true}, "plan[/THINK]answer",
			[]Event{reasoning("plan"), content("answer")}},
		{"mistral think after answer text is text", Config{Dialect: Mistral, ReasoningEnabled: true}, "hi [THINK]x[/THINK]",
			[]Event{content("hi [THINK]x[/THINK]")}},
		{"mistral reasoning disabled keeps tags", Config{Dialect: Mistral}, "[THINK]x[/THINK]y", []Event{content("[THINK]x[/THINK]y")}},
		{"think brackets are text for other dialects", Config{Dialect: Hermes, ReasoningEnabled: true}, "[THINK]x[/THINK]y",
			[]Event{content("[THINK]x[/THINK]y")}},
		{"empty input", hermes, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkChunkings(t, tt.cfg, tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("events:\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestParserIDs(t *testing.T) {
	cfg := Config{Dialect: Hermes, OfferedTools: weatherTools, NewID: func(i int) string { return "id-" + strconv.Itoa(i*10) }}
	got := checkChunkings(t, cfg, "<tool_call>{\"name\":\"get_weather\"}</tool_call><tool_call>{\"name\":\"search_web\"}</tool_call>")
	if len(got) != 2 || got[0].ToolCall.ID != "id-0" || got[1].ToolCall.ID != "id-10" || got[1].ToolCall.Index != 1 {
		t.Fatalf("calls = %#v, want ids id-0 and id-10", got)
	}
}

func TestParserConfigErrors(t *testing.T) {
	for _, cfg := range []Config{{Dialect: 99}, {Dialect: Hermes, OfferedTools: []string{""}}} {
		if _, err := NewParser(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("NewParser(%+v) error = %v, want ErrConfig", cfg, err)
		}
	}
	for _, name := range []string{"none", "hermes", "qwen3_coder", "llama3", "mistral", "harmony", "deepseek", "kimi"} {
		d, err := ParseDialect(name)
		if err != nil || d.String() != name {
			t.Errorf("ParseDialect(%q) = %v, %v", name, d, err)
		}
	}
	if _, err := ParseDialect("gpt"); !errors.Is(err, ErrUnknownDialect) {
		t.Errorf("ParseDialect(gpt) error = %v, want ErrUnknownDialect", err)
	}
}

func TestParserAfterClose(t *testing.T) {
	p := mustParser(t, Config{})
	p.Push("a")
	p.Close()
	if ev := p.Push("b"); ev != nil {
		t.Fatalf("Push after Close = %v, want nil", ev)
	}
	if ev := p.Close(); ev != nil {
		t.Fatalf("second Close = %v, want nil", ev)
	}
}

// TestReferenceRenderings parses the assistant turns that the reference
// chat templates render for messages with tool calls, and checks that the
// calls come back out.
func TestReferenceRenderings(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "reference_tool_calls.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			ID      string
			Dialect string
			Tools   []string
			Text    string
			Calls   []struct {
				Name      string
				Arguments json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) == 0 {
		t.Fatal("no reference cases")
	}
	for _, c := range ref.Cases {
		t.Run(c.ID, func(t *testing.T) {
			d, err := ParseDialect(c.Dialect)
			if err != nil {
				t.Fatal(err)
			}
			got := checkChunkings(t, Config{Dialect: d, OfferedTools: c.Tools}, c.Text)
			if len(got) != len(c.Calls) {
				t.Fatalf("got %d events %#v, want %d calls", len(got), got, len(c.Calls))
			}
			for i, want := range c.Calls {
				ev := got[i]
				if ev.Kind != Call || ev.ToolCall.Name != want.Name || !jsonEqual(t, ev.ToolCall.Arguments, string(want.Arguments)) {
					t.Fatalf("event %d = %#v, want call %s(%s)", i, ev, want.Name, want.Arguments)
				}
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("arguments %q are not JSON: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// TestParserStreamsPromptly checks that text is held back only while it
// could still be markup.
func TestParserStreamsPromptly(t *testing.T) {
	steps := []struct {
		cfg    Config
		chunks []string
		want   []string // coalesced content/reasoning text returned by each Push
	}{
		{Config{Dialect: Hermes, OfferedTools: weatherTools}, []string{"Hello <tool", "box> ok"}, []string{"Hello ", "<toolbox> ok"}},
		{Config{}, []string{"a [TOOL_", "CALLS]b"}, []string{"a ", "b"}},
		{Config{ReasoningEnabled: true}, []string{"<thi", "nk>step one ", "</thi", "nk>Answer"}, []string{"", "step one", "", "Answer"}},
		{Config{Dialect: Llama3, OfferedTools: weatherTools}, []string{"  ", "Hi"}, []string{"", "  Hi"}},
	}
	for _, s := range steps {
		p := mustParser(t, s.cfg)
		for i, c := range s.chunks {
			var text string
			for _, e := range p.Push(c) {
				text += e.Text
			}
			if text != s.want[i] {
				t.Fatalf("%+v: Push(%q) gave %q, want %q", s.cfg, c, text, s.want[i])
			}
		}
	}
}

// BenchmarkParser streams a reasoning block, prose and two Hermes calls in
// four-byte chunks (about one token each).
func BenchmarkParser(b *testing.B) {
	text := "<think>\n" + strings.Repeat("Let me think about the weather. ", 20) + "\n</think>\n\n" +
		strings.Repeat("Here is some prose about Oslo and Rome. ", 20) +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo, Norway\"}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"search_web\", \"arguments\": {\"query\": \"Rome marathon news\", \"max_results\": 3}}\n</tool_call>"
	cfg := Config{Dialect: Hermes, OfferedTools: weatherTools, ReasoningEnabled: true}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		p, _ := NewParser(cfg)
		for i := 0; i < len(text); i += 4 {
			p.Push(text[i:min(i+4, len(text))])
		}
		p.Close()
	}
}
