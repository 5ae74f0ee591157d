package chat

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostileTemplates is the corpus of templates that each pass one budget of
// DefaultLimits: the budget each must name.
func hostileTemplates() []struct{ name, src, budget string } {
	big := func(s string, n int) string { return strings.Repeat(s, n) }
	return []struct{ name, src, budget string }{
		{"~ concatenation doubling", "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}", "memory"},
		{"~ concatenation growing in a loop", "{% set ns = namespace(s='') %}{% for i in range(1000000) %}{% set ns.s = ns.s ~ 'xxxxxxxxxxxxxxxx' %}{% endfor %}{{ ns.s|length }}", "memory"},
		{"list + doubling", "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}", "memory"},
		{"string + doubling", "{% set ns = namespace(s='y') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}", "memory"},
		{"join with a large separator", "{{ range(1000000)|join('x' * 1000000) }}", "memory"},
		{"join of large items", "{% set s = 'x' * 10000000 %}{{ [s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s]|join }}", "memory"},
		{"replace filter amplifying", "{{ ('a' * 1000000)|replace('a', 'b' * 10000) }}", "memory"},
		{"str.replace amplifying", "{{ ('a' * 1000000).replace('a', 'bbbbbbbbbb' * 1000) }}", "memory"},
		{"replace of the empty string", "{{ ('a' * 1000000)|replace('', 'c' * 1000) }}", "memory"},
		{"tojson indent huge", "{{ range(1000)|list|tojson(indent=100000000) }}", "output"},
		{"tojson indent just under the output budget", "{{ range(1000)|list|tojson(indent=16000000) }}", "output"},
		{"tojson indent on deep nesting", "{% set ns = namespace(v=[]) %}{% for i in range(200) %}{% set ns.v = [ns.v, ns.v] %}{% endfor %}{{ ns.v|tojson(indent=1000) }}", "output"},
		{"str.format amplifying", "{{ ('{0}' * 100000).format('x' * 10000) }}", "memory"},
		{"indent amplifying", "{{ ('a\\n' * 1000000)|indent(1000) }}", "memory"},
		{"repetition in a loop", "{% for i in range(100000) %}{% set s = 'x' * 10000000 %}{% endfor %}", "memory"},
		{"range in a loop", "{% for i in range(100000) %}{% set r = range(1000000) %}{% endfor %}", "memory"},
		{"three nested loops", "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}{% endfor %}{% endfor %}{% endfor %}", "steps"},
		{"nested loops over one list", "{% set l = range(2000) %}{% for a in l %}{% for b in l %}{% endfor %}{% endfor %}", "steps"},
		{"loop over a long string", "{% for c in 'x' * 16000000 %}{% endfor %}", "steps"},
		{"macro fan-out", "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}", "steps"},
		{"macro text fan-out", "{% macro m() %}" + big("A", 10000) + "{% endmacro %}{% for i in range(100000) %}{{ m() }}{% endfor %}", "output"},
		{"loop body text", "{% for i in range(1000000) %}" + big("B", 100) + "{% endfor %}", "output"},
		{"list.append in nested loops", "{% set l = [] %}{% for a in range(1000) %}{% for b in range(1000) %}{% set _ = l.append(a) %}{% endfor %}{% endfor %}", "steps"},
		{"list.append doubling", "{% set l = [1] %}{% for a in range(64) %}{% for x in l %}{% set _ = l.append(x) %}{% endfor %}{% endfor %}", "steps"},
		{"output of expressions", "{% set s = 'x' * 1000000 %}{% for i in range(100) %}{{ s }}{% endfor %}", "output"},
	}
}

// TestHostileTemplateCorpus renders each hostile template under the
// default budgets: each ends in a *LimitError naming its budget within 2 s,
// with the render's allocations bounded, and a real conversation renders
// after each.
func TestHostileTemplateCorpus(t *testing.T) {
	corpus := hostileTemplates()
	if len(corpus) < 15 {
		t.Fatalf("the corpus has %d templates, want at least 15", len(corpus))
	}
	normal := mustParseFile(t, "Qwen-Qwen3-0.6B.jinja")
	msgs, tools := conversation(t, "tool_call_roundtrip")
	// What a render may allocate: its memory budget for the helpers, twice
	// its output budget for the engine's output buffer, and the engine's
	// own work per step.
	bound := uint64(DefaultLimits.Alloc + 2*DefaultLimits.Output + 512*DefaultLimits.Steps)
	var peak uint64
	t.Cleanup(func() { t.Logf("heap obtained from the OS after the corpus: %d MiB", peak>>20) })
	for _, c := range corpus {
		t.Run(c.name, func(t *testing.T) {
			tpl, err := Parse(c.src)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err = tpl.RenderContext(t.Context(), Input{})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			peak = max(peak, after.HeapSys)
			// On a loaded machine the time budget may end a render before
			// the budget it would pass: that is a refusal too.
			var le *LimitError
			if !errors.As(err, &le) || (le.Budget != c.budget && le.Budget != "time") {
				t.Fatalf("err = %v, want a LimitError of the %s budget", err, c.budget)
			}
			if took > 2*time.Second {
				t.Errorf("took %v, want at most 2s", took)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bound {
				t.Errorf("allocated %d bytes, want at most %d", alloc, bound)
			} else {
				t.Logf("%v, %d MiB allocated: %v", took, alloc>>20, err)
			}
			if _, err := normal.RenderContext(t.Context(), Input{Messages: msgs, Tools: tools, AddGenerationPrompt: true}); err != nil {
				t.Fatalf("a normal render after it: %v", err)
			}
		})
	}
}

// TestRenderCancel ends a long render from its context, and from its own
// time budget, each within a moment.
func TestRenderCancel(t *testing.T) {
	src := "{% for a in range(1000000) %}{{ a }}{% endfor %}"
	tpl, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	slow := &Limits{Steps: 1 << 40, Output: 1 << 40, Alloc: 1 << 40, Time: time.Hour}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err = tpl.RenderContext(ctx, Input{Limits: slow})
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("cancelled: %v after %v, want context.Canceled at once", err, time.Since(start))
	}
	quick := *slow
	quick.Time = 20 * time.Millisecond
	start = time.Now()
	_, err = tpl.RenderContext(t.Context(), Input{Limits: &quick})
	var le *LimitError
	if !errors.As(err, &le) || le.Budget != "time" || time.Since(start) > time.Second {
		t.Fatalf("timed out: %v after %v, want the time budget at once", err, time.Since(start))
	}
}

// TestRealTemplatesWithinBudget renders every golden conversation well
// inside the default budgets (a tenth of each).
func TestRealTemplatesWithinBudget(t *testing.T) {
	tenth := &Limits{Steps: DefaultLimits.Steps / 10, Output: DefaultLimits.Output / 10, Alloc: DefaultLimits.Alloc / 10, Time: DefaultLimits.Time}
	tpl := mustParseFile(t, "Qwen-Qwen3-0.6B.jinja")
	msgs, tools := conversation(t, "tool_call_roundtrip")
	if _, err := tpl.RenderContext(t.Context(), Input{Messages: msgs, Tools: tools, AddGenerationPrompt: true, Limits: tenth}); err != nil {
		t.Fatal(err)
	}
}

// TestLongConversationWithinBudget renders a conversation of 2000 turns of
// 2 KiB each (4 MiB of prompt) through every golden template: the default
// budgets leave room for it.
func TestLongConversationWithinBudget(t *testing.T) {
	var msgs []Object
	for i := range 2000 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, Message{Role: role, Content: strings.Repeat("word ", 400)}.Object())
	}
	names, err := filepath.Glob("testdata/*.jinja")
	if err != nil || len(names) == 0 {
		t.Fatalf("templates: %v %v", names, err)
	}
	for _, name := range names {
		t.Run(filepath.Base(name), func(t *testing.T) {
			tpl := mustParseFile(t, filepath.Base(name))
			start := time.Now()
			out, err := tpl.RenderContext(t.Context(), Input{Messages: msgs, AddGenerationPrompt: true, Now: time.Unix(0, 0)})
			var le *LimitError
			if errors.As(err, &le) {
				t.Fatalf("a long conversation passes the %s budget", le.Budget)
			}
			t.Logf("%d bytes in %v (err %v)", len(out), time.Since(start), err)
		})
	}
}

// TestGrowMethods: the counted append, insert and update do what the
// engine's do.
func TestGrowMethods(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"{% set l = [1] %}{% set _ = l.append(2) %}{% set _ = l.insert(0, 0) %}{% set _ = l.insert(99, 3) %}{{ l }}", "[0, 1, 2, 3]"},
		{"{% set d = {'a': 1} %}{% set _ = d.update({'b': 2, 'a': 3}) %}{{ d }}", "{'a': 3, 'b': 2}"},
		{"{% set ns = namespace(l=[]) %}{% for m in ['x', 'y'] %}{% set _ = ns.l.append(m) %}{% endfor %}{{ ns.l|join(',') }}", "x,y"},
	} {
		got, err := render(t, c.src, nil)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.src, got, err, c.want)
		}
	}
	if _, err := render(t, "{{ 'abc'.append(1) }}", nil); err == nil || !strings.Contains(err.Error(), "AttributeError") {
		t.Errorf("append on a string: %v, want an AttributeError", err)
	}
}
