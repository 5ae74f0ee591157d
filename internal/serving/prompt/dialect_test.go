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
		file string
		want output.Dialect
	}{
		{"moe/openai-gpt-oss-120b.jinja", output.Harmony},
		{"moe/deepseek-ai-DeepSeek-V3.1.jinja", output.DeepSeek},
		{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", output.DeepSeek},
		{"moe/moonshotai-Kimi-K2.jinja", output.Kimi},
		{"moe/GLM-4.6.jinja", output.Hermes},
		{"Qwen-Qwen3-0.6B.jinja", output.Hermes},
		{"Qwen3-Coder.jinja", output.QwenXML},
		{"google-gemma-2-2b-it.jinja", output.NoDialect},
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
	}
}
