package prompt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine/chat"
	"github.com/skulk/skulk/internal/engine/output"
)

// TestDialectOfTemplates: real templates select the output dialect their
// models write.
func TestDialectOfTemplates(t *testing.T) {
	dir := filepath.Join("..", "..", "engine", "chat", "testdata")
	tests := []struct {
		file    string
		want    output.Dialect
		reasons bool
	}{
		{"moe/openai-gpt-oss-120b.jinja", output.Harmony, true},
		{"moe/deepseek-ai-DeepSeek-V3.1.jinja", output.DeepSeek, true},
		{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", output.DeepSeek, true},
		{"moe/moonshotai-Kimi-K2.jinja", output.Kimi, false},
		{"moe/GLM-4.6.jinja", output.Hermes, true},
		{"Qwen-Qwen3-0.6B.jinja", output.Hermes, true},
		{"Qwen3-Coder.jinja", output.QwenXML, false},
		{"google-gemma-2-2b-it.jinja", output.NoDialect, false},
		// mistral3's Mistral Small 3.x: [TOOL_CALLS]NAME[ARGS]{...}, no
		// reasoning.
		{"Mistral-Small-3.2-24B-Instruct-2506.jinja", output.Mistral, false},
	}
	for _, tt := range tests {
		src, err := os.ReadFile(filepath.Join(dir, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		tpl, err := chat.Parse(string(src))
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if got := dialectOf(tpl.Family()); got != tt.want {
			t.Errorf("%s: dialect %v, want %v", tt.file, got, tt.want)
		}
		if got := reasons(dialectOf(tpl.Family()), tpl.Source()); got != tt.reasons {
			t.Errorf("%s: reasoning %v, want %v", tt.file, got, tt.reasons)
		}
	}
	// Ministral 3 Reasoning's template (not among the reference
	// templates): Mistral's calls, and reasoning between [THINK] and
	// [/THINK], which its default system prompt shows.
	src := `{{- bos_token }}[SYSTEM_PROMPT]Your thinking process must follow the template below:[THINK]Your thoughts[/THINK]Here.[/SYSTEM_PROMPT]` +
		`{%- for m in messages %}{%- if m.role == 'user' %}[INST]{{ m.content }}[/INST]{%- elif m.tool_calls is defined %}` +
		`{%- for c in m.tool_calls %}[TOOL_CALLS]{{ c.function.name }}[ARGS]{{ c.function.arguments|tojson }}{%- endfor %}{%- endif %}{%- endfor %}`
	tpl, err := chat.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if d := dialectOf(tpl.Family()); d != output.Mistral || !reasons(d, tpl.Source()) {
		t.Errorf("a [THINK] template: dialect %v, reasoning %v; want mistral with reasoning", d, reasons(d, tpl.Source()))
	}
}
