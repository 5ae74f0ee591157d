package prompt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/output"
	"github.com/skulk/skulk/internal/serving/request"
)

// TestHarmonyRequestPath: with gpt-oss's real template a model serves the
// harmony dialect, and a tool round trip as clients send it (the call's
// turn with null content and reasoning_content) renders with the reasoning
// in the analysis channel, where the template puts message.thinking, and a
// tool without a description (get_time) does not break the template.
func TestHarmonyRequestPath(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "engine", "chat", "testdata", "moe", "openai-gpt-oss-120b.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	l := openModel(t, string(src))
	if l.Chat.dialect != output.Harmony || !l.Chat.reasoning {
		t.Fatalf("dialect %v reasoning %v, want harmony with reasoning", l.Chat.dialect, l.Chat.reasoning)
	}
	req := request.Request{Chat: true, Tools: harmonyTools, Messages: []request.Message{
		{Role: request.RoleUser, Content: "Weather in Oslo?"},
		{Role: request.RoleAssistant, ReasoningContent: "Call get_weather for Oslo.",
			ToolCalls: []request.ToolCall{{ID: "call_0", Name: "get_weather", Arguments: `{"city":"Oslo","unit":"celsius"}`}}},
		{Role: request.RoleTool, ToolCallID: "call_0", Content: "21"},
	}}
	rendered, cfg, err := renderChat(t.Context(), l, req)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|start|>user<|message|>Weather in Oslo?<|end|>" +
		"<|start|>assistant<|channel|>analysis<|message|>Call get_weather for Oslo.<|end|>" +
		"<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Oslo\", \"unit\": \"celsius\"}<|call|>" +
		"<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"21\"<|end|><|start|>assistant"
	if !strings.HasSuffix(rendered, want) {
		t.Fatalf("prompt ends\n%q\nwant it to end\n%q", rendered[max(0, len(rendered)-len(want)):], want)
	}
	if cfg.Dialect != output.Harmony || len(cfg.OfferedTools) != 2 || cfg.StartInReasoning {
		t.Fatalf("parser config %+v", cfg)
	}
	// A forced call opens a commentary message for its value.
	req.ToolChoice = request.ToolChoice{Mode: "required"}
	p, err := Prepare(t.Context(), l, req)
	if err != nil {
		t.Fatal(err)
	}
	if p.structured == nil || !strings.HasPrefix(p.structured.prefix, "<|channel|>commentary<|message|>") {
		t.Fatalf("forced call prefix %+v", p.structured)
	}
}

// harmonyTools are two tools, one without a description.
var harmonyTools = []request.Tool{
	{Name: "get_weather", Description: "Weather in a city", Parameters: json.RawMessage(`{"type":"object","properties":{
		"city":{"type":"string","maxLength":10},"unit":{"enum":["celsius","fahrenheit"]}},
		"required":["city","unit"],"additionalProperties":false}`)},
	{Name: "get_time"},
}
