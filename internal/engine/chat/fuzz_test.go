package chat

import (
	"os"
	"path/filepath"
	"runtime"
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
	for _, c := range hostileTemplates() {
		f.Add(c.src)
	}
	// Small budgets keep each input quick; a render must end within its
	// time budget (with slack for a loaded machine) and allocate within
	// what its budgets allow.
	lim := Limits{Steps: 1 << 16, Output: 1 << 20, Alloc: 8 << 20, Time: 200 * time.Millisecond}
	bound := uint64(lim.Alloc + 2*lim.Output + 512*lim.Steps + 4<<20)
	f.Fuzz(func(t *testing.T, src string) {
		tpl, err := Parse(src)
		if err != nil {
			return
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, _ = tpl.Render(Input{Messages: msgs, AddGenerationPrompt: true, Now: time.Unix(0, 0), Limits: &lim})
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if took > time.Second {
			t.Fatalf("the render took %v under a %v budget", took, lim.Time)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bound {
			t.Fatalf("the render allocated %d bytes, its budgets allow %d", alloc, bound)
		}
	})
}
