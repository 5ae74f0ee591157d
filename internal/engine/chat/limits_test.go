package chat

import (
	"errors"
	"strings"
	"testing"
)

func TestSlicesAndRepetition(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"reverse", "{{ [1, 2, 3][::-1] }}", "[3, 2, 1]"},
		{"tail", "{{ [1, 2, 3][1:] }}", "[2, 3]"},
		{"negative_bounds", "{{ [1, 2, 3, 4][-3:-1] }}", "[2, 3]"},
		{"step_two", "{{ 'abcdef'[::2] }}", "ace"},
		{"reverse_from", "{{ 'abcdef'[3::-1] }}", "dcba"},
		{"out_of_range_clamps", "{{ [1, 2][5:99] }}|{{ [1, 2][:999999999999999:3] }}", "[]|[1]"},
		{"unicode_by_code_point", "{{ 'héllo'[1:3] }}", "él"},
		{"range", "{{ range(3) }}|{{ range(5, 0, -2) }}", "[0, 1, 2]|[5, 3, 1]"},
		{"string_repeat", "{{ 'ab' * 3 }}|{{ 2 * 'x' }}", "ababab|xx"},
		{"list_repeat", "{{ [0] * 2 }}", "[0, 0]"},
		{"numbers", "{{ 2 * 3 }}|{{ 2 * 1.5 }}", "6|3.0"},
		{"recursive_macro", "{% macro f(n) %}{{ n }}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}", "3210"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := render(t, tt.src, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLimitErrors: costs a template controls end in a *LimitError naming
// the limit; a Python error stays a RenderError.
func TestLimitErrors(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		budget string // "" for the RenderError
		want   string
	}{
		{"huge_range", "{{ range(10000000000)|length }}", "range", ""},
		{"huge_repeat", "{{ 'x' * 100000000000 }}", "repetition", ""},
		{"endless_recursion", "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "macro depth", ""},
		{"zero_step", "{{ [1][::0] }}", "", "ValueError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render(t, tt.src, nil)
			if tt.budget != "" {
				var le *LimitError
				if !errors.As(err, &le) || le.Budget != tt.budget {
					t.Fatalf("got %v, want a LimitError of the %s budget", err, tt.budget)
				}
				return
			}
			var re *RenderError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a RenderError with %s", err, tt.want)
			}
		})
	}
}
