package chat

import (
	"errors"
	"strings"
	"testing"
)

// render parses src and renders it with vars as kwargs; it is the harness
// for the jinja2-semantics tables below.
func render(t *testing.T, src string, vars map[string]any) (string, error) {
	t.Helper()
	tpl, err := Parse(src)
	if err != nil {
		return "", err
	}
	return tpl.Render(Input{Kwargs: vars})
}

func TestPythonSemantics(t *testing.T) {
	tests := []struct {
		name string
		src  string
		vars map[string]any
		want string
	}{
		{"none_prints_as_None", "{{ none }}", nil, "None"},
		{"bool_prints_capitalised", "{{ true }}|{{ False }}", nil, "True|False"},
		{"float_keeps_point", "{{ 1.0 }}|{{ 2.5 }}|{{ 1e20 }}", nil, "1.0|2.5|1e+20"},
		{"list_repr", "{{ [1, 'a', none, 1.5] }}", nil, "[1, 'a', None, 1.5]"},
		{"dict_repr_quotes", `{{ {'a': "it's"} }}`, nil, `{'a': "it's"}`},
		{"undefined_prints_empty", "[{{ nothing }}]", nil, "[]"},
		{"tilde_stringifies", "{{ 'a' ~ none ~ 1 ~ nothing }}", nil, "aNone1"},
		{"precedence_mul_over_add", "{{ 1 + 2 * 3 }}", nil, "7"},
		{"neg_then_filter", "{{ -3|abs }}", nil, "3"},
		{"string_in_string", "{{ 'b' in 'abc' }}|{{ 'z' not in 'abc' }}", nil, "True|True"},
		{"in_list_numeric_equality", "{{ 1.0 in [1, 2] }}", nil, "True"},
		{"in_dict_keys", "{{ 'k' in {'k': 1} }}", nil, "True"},
		{"in_undefined_is_false", "{{ 'a' in nothing }}", nil, "False"},
		{"list_concat", "{{ ([1] + [2])|length }}", nil, "2"},
		{"adjacent_literals", "{{ 'a' 'b' }}", nil, "ab"},
		{"for_over_undefined_is_empty", "[{% for x in nothing %}x{% endfor %}]", nil, "[]"},
		{"for_destructure", "{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}", nil, "1234"},
		{"for_over_dict_keys", "{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}", nil, "xy"},
		{"for_with_filter", "{% for x in [1, 2, 3] if x != 2 %}{{ x }}{% endfor %}", nil, "13"},
		{"namespace_set", "{% set ns = namespace(x=1) %}{% set ns.x = ns.x + 1 %}{{ ns.x }}", nil, "2"},
		{"macro_default", "{% macro f(a, b='x' + 'y') %}{{ a }}{{ b }}{% endmacro %}{{ f(1) }}", nil, "1xy"},
		{"cond_without_else", "[{{ 'a' if false }}]", nil, "[]"},
		{"cond_with_else", "{{ 'a' if false else 'b' }}", nil, "b"},
		{"is_iterable_undefined", "{{ nothing is iterable }}|{{ none is iterable }}", nil, "True|False"},
		{"is_sequence_string", "{{ 'ab' is sequence }}|{{ 3 is not sequence }}", nil, "True|True"},
		{"is_number_bool", "{{ true is number }}", nil, "True"},
		{"bare_test_argument", "{{ none is sameas none }}", nil, "True"},
		{"join_stringifies", "{{ [1, none, 'x']|join(',') }}", nil, "1,None,x"},
		{"join_attribute", "{{ [{'n': 'a'}, {'n': 'b'}]|join('-', attribute='n') }}", nil, "a-b"},
		{"string_filter", "{{ none|string }}", nil, "None"},
		{"slice_reverse", "{{ [1, 2, 3][::-1] }}", nil, "[3, 2, 1]"},
		{"negative_index", "{{ msgs[-1].content }}", map[string]any{"msgs": []any{Object{{"content", "last"}}}}, "last"},
		{"trailing_newline_dropped", "a\n", nil, "a"},
		{"only_one_trailing_newline_dropped", "a\n\n", nil, "a\n"},
		{"crlf_normalised", "a\r\nb", nil, "a\nb"},
		{"raw_block_verbatim", "{% raw %}{{ x + }}{% endraw %}", nil, "{{ x + }}"},
		{"trim_and_lstrip_blocks", "a\n  {% if true %}\nb\n  {% endif %}\nc", nil, "a\nb\nc"},
		{"kwarg_visible", "{{ enable_thinking is false }}", map[string]any{"enable_thinking": false}, "True"},
		{"json_number_int", "{{ n + 1 }}", map[string]any{"n": 41}, "42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := render(t, tt.src, tt.vars)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPythonTypeErrors covers renders Python refuses and the engine alone
// would let through.
func TestPythonTypeErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // in the error text
	}{
		{"str_plus_none", "{{ 'a' + none }}", `can only concatenate str (not "NoneType") to str`},
		{"str_plus_int", "{{ 'a' + 1 }}", `can only concatenate str (not "int") to str`},
		{"int_plus_str", "{{ 1 + 'a' }}", "unsupported operand type(s) for +: 'int' and 'str'"},
		{"tilde_binds_tighter_than_plus", "{{ 'x' ~ 1 + 2 }}", `can only concatenate str (not "int") to str`},
		{"plus_undefined", "{{ nothing + 'a' }}", "UndefinedError"},
		{"in_none", "{{ 'a' in none }}", "argument of type 'NoneType' is not iterable"},
		{"int_in_string", "{{ 1 in 'abc' }}", "'in <string>' requires string as left operand, not int"},
		{"for_over_none", "{% for x in none %}{% endfor %}", "'NoneType' object is not iterable"},
		{"for_over_int", "{% for x in 3 %}{% endfor %}", "'int' object is not iterable"},
		{"items_of_string", "{% for k, v in 'ab'|items %}{% endfor %}", "Can only get item pairs from a mapping."},
		{"tojson_undefined", "{{ nothing|tojson }}", "not JSON serializable"},
		{"method_on_none", "{{ none.split('a') }}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := render(t, tt.src, nil)
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("want *RenderError, got %v (output %q)", err, out)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
	}{
		{"dangling_operator", "{{ 'a' + }}"},
		{"unclosed_expression", "{{ x "},
		{"unclosed_string", "{{ 'abc }}"},
		{"for_without_in", "{% for x %}{% endfor %}"},
		{"unclosed_raw", "{% raw %}abc"},
		{"empty_statement", "{% %}"},
		{"bad_attribute", "{{ a. }}"},
		{"unknown_statement", "{% frobnicate %}"},
		{"unclosed_if", "{% if x %}abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("want *SyntaxError, got %v", err)
			}
		})
	}
}
