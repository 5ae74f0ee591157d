package chat

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParseRender: a template from a model file is untrusted; whatever it
// holds, Parse and Render return a value or an error and never panic.
func FuzzParseRender(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jinja")
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	f.Add("{{ a + b ~ c in d is e }}{% for x in y if z %}{% endfor %}")
	f.Add("{% macro m(a=[1, 2]) %}{% endmacro %}{% raw %}{{{% endraw %}")
	msgs := []Object{
		{{Key: "role", Value: "user"}, {Key: "content", Value: "hi"}},
		{{Key: "role", Value: "assistant"}, {Key: "content", Value: nil}},
	}
	f.Fuzz(func(t *testing.T, src string) {
		tpl, err := Parse(src)
		if err != nil {
			return
		}
		_, _ = tpl.Render(Input{Messages: msgs, AddGenerationPrompt: true, Now: time.Unix(0, 0)})
	})
}
