package chat

import (
	"testing"
	"time"
)

// Expectations below were produced by CPython 3's json.dumps and
// datetime.strftime with the same arguments.

func TestToJSON(t *testing.T) {
	tests := []struct {
		name string
		val  string // JSON input, decoded in order
		call string // the filter call applied to v
		want string
	}{
		{"defaults_keep_order_and_unicode", `{"b": [1, 2.0, null, true], "a": "é\u2028\u0001\"\\"}`, "v|tojson",
			"{\"b\": [1, 2.0, null, true], \"a\": \"é\u2028\\u0001\\\"\\\\\"}"},
		{"indent", `{"b": [1, {}], "a": []}`, "v|tojson(indent=2)",
			"{\n  \"b\": [\n    1,\n    {}\n  ],\n  \"a\": []\n}"},
		{"sort_keys_ensure_ascii", `{"b": 1, "a": "😀é"}`, "v|tojson(sort_keys=true, ensure_ascii=true)",
			`{"a": "\ud83d\ude00\u00e9", "b": 1}`},
		{"separators", `[1, 2]`, "v|tojson(separators=(',', ':'))", `[1,2]`},
		{"small_float", `1e-7`, "v|tojson", `1e-07`},
		{"large_float", `123456789012345678.0`, "v|tojson", `1.2345678901234568e+17`},
		{"no_html_escaping", `"<b>&</b>"`, "v|tojson", `"<b>&</b>"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := DecodeJSON([]byte(tt.val))
			if err != nil {
				t.Fatal(err)
			}
			got, err := render(t, "{{ "+tt.call+" }}", map[string]any{"v": v})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestStrftime(t *testing.T) {
	tests := []struct {
		name   string
		at     time.Time
		format string
		want   string
	}{
		{"llama_date", time.Date(2025, 3, 4, 9, 6, 3, 0, time.UTC), "%d %b %Y", "04 Mar 2025"},
		{"iso_date", time.Date(2025, 3, 4, 9, 6, 3, 0, time.UTC), "%Y-%m-%d", "2025-03-04"},
		{"unpadded_glibc", time.Date(2025, 3, 4, 9, 6, 3, 0, time.UTC), "%-d %B", "4 March"},
		{"names_and_clock", time.Date(2025, 3, 4, 9, 6, 3, 0, time.UTC), "%A %a %H:%M:%S %I%p %j %y", "Tuesday Tue 09:06:03 09AM 063 25"},
		{"naive_zone_empty", time.Date(2025, 3, 4, 9, 6, 3, 0, time.UTC), "%Z%z|%%|%Q", "|%|%Q"},
		{"evening_year_end", time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC), "%I %p %j %u %w", "11 PM 365 3 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strftime(tt.format, tt.at); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStrftimeNowUsesInput checks the clock comes from Input.Now only.
func TestStrftimeNowUsesInput(t *testing.T) {
	tpl, err := Parse(`{{ strftime_now("%d %b %Y") }}`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tpl.Render(Input{Now: time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)})
	if err != nil || got != "31 Dec 1999" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := tpl.Render(Input{}); err != ErrNoClock {
		t.Fatalf("zero Now: got %v, want ErrNoClock", err)
	}
}
