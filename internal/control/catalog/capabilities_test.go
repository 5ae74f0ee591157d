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
}
