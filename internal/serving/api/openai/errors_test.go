package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
)

// TestErrorFromCode: an error's own code replaces its class's, so a
// template refused for its budgets reaches the client as template_limit.
func TestErrorFromCode(t *testing.T) {
	for _, c := range []struct {
		name string
		in   *fault.Error
		code string // "" for none
	}{
		{"class code", &fault.Error{Class: fault.ClassUnavailable, Message: "m"}, "unavailable"},
		{"invalid has none", &fault.Error{Class: fault.ClassInvalid, Message: "m"}, ""},
		{"template limit", &fault.Error{Class: fault.ClassInvalid, Param: "messages", Code: fault.CodeTemplateLimit, Message: "m"}, "template_limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(ErrorFrom(c.in))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Error struct {
					Code *string `json:"code"`
					Type string  `json:"type"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			got := ""
			if doc.Error.Code != nil {
				got = *doc.Error.Code
			}
			if got != c.code || !strings.HasSuffix(doc.Error.Type, "_error") {
				t.Fatalf("%s: code %q, want %q", b, got, c.code)
			}
		})
	}
}
