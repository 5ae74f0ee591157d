package catalog

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCapabilitiesFromTemplate reads the capabilities of real templates.
func TestCapabilitiesFromTemplate(t *testing.T) {
	dir := filepath.Join("..", "..", "engine", "chat", "testdata")
	tests := []struct {
		file string
		want []Capability
	}{
		{"moe/openai-gpt-oss-120b.jinja", []Capability{CapTools, CapReasoning}},
		{"Qwen-Qwen3-0.6B.jinja", []Capability{CapTools, CapReasoning}},
		{"Qwen-Qwen2.5-7B-Instruct.jinja", []Capability{CapTools}},
		{"google-gemma-2-2b-it.jinja", nil},
		{"Mistral-Small-3.2-24B-Instruct-2506.jinja", []Capability{CapTools}},
	}
	for _, tt := range tests {
		src, err := os.ReadFile(filepath.Join(dir, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := capabilitiesFromTemplate(string(src)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: capabilities %v, want %v", tt.file, got, tt.want)
		}
	}
	// Ministral 3 Reasoning's template (not among the reference
	// templates) shows the [THINK] block in its default system prompt
	// and renders assistant thinking chunks between the same tags.
	ministral := `{%- set default_system_message = 'Your thinking process must follow the template below:[THINK]Your thoughts[/THINK]Here, provide a self-contained response.' %}` +
		`{%- if tools is defined %}[AVAILABLE_TOOLS]{{ tools|tojson }}[/AVAILABLE_TOOLS]{%- endif %}`
	if got := capabilitiesFromTemplate(ministral); !slices.Equal(got, []Capability{CapTools, CapReasoning}) {
		t.Errorf("a [THINK] template: capabilities %v, want tools and reasoning", got)
	}
}
