package prompt

import (
	"errors"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

// TestHostileTemplateRefused loads the model with hostile chat templates:
// the load succeeds, a chat request is a 400 with code template_limit
// within 2 s, and a raw prompt to the same model is still served.
func TestHostileTemplateRefused(t *testing.T) {
	for _, c := range []struct{ name, src string }{
		{"nested loops", "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}{% endfor %}{% endfor %}{% endfor %}"},
		{"concatenation doubling", "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}"},
		{"macro fan-out", "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}"},
		{"tojson indent", "{{ messages|tojson(indent=100000000) }}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := openModel(t, c.src)
			start := time.Now()
			_, err := Prepare(t.Context(), l, request.Request{Chat: true, Messages: []request.Message{{Role: request.RoleUser, Content: "hi"}}})
			var ie *fault.Error
			if !errors.As(err, &ie) || ie.Class != fault.ClassInvalid || ie.Code != fault.CodeTemplateLimit {
				t.Fatalf("chat: %v, want a 400 with code %s", err, fault.CodeTemplateLimit)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("refused after %v, want within 2s", took)
			}
			if _, err := Prepare(t.Context(), l, request.Request{Prompt: "Once upon a time"}); err != nil {
				t.Fatalf("a raw prompt after the refusal: %v", err)
			}
		})
	}
}
