package fault

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuoteAndClip(t *testing.T) {
	x200 := strings.Repeat("x", MaxQuoted)
	tests := []struct {
		name      string
		in        string
		quote     string
		clip      string
		valueUTF8 bool // the kept part is valid UTF-8
	}{
		{name: "empty", in: "", quote: `""`, clip: ""},
		{name: "short", in: "gpt-4o", quote: `"gpt-4o"`, clip: "gpt-4o"},
		{name: "escapes", in: "a\"b\n", quote: `"a\"b\n"`, clip: "a\"b\n"},
		{name: "exactly_the_limit", in: x200, quote: `"` + x200 + `"`, clip: x200},
		{name: "one_byte_over", in: x200 + "y", quote: `"` + x200 + `"…(201 bytes)`, clip: x200 + "…(201 bytes)"},
		{name: "a_megabyte", in: strings.Repeat("x", 1<<20), quote: `"` + x200 + `"…(1048576 bytes)`, clip: x200 + "…(1048576 bytes)"},
		// A three-byte character straddling the limit is left out whole.
		{name: "utf8_boundary", in: strings.Repeat("x", MaxQuoted-1) + "€€", quote: `"` + strings.Repeat("x", MaxQuoted-1) + `"…(205 bytes)`,
			clip: strings.Repeat("x", MaxQuoted-1) + "…(205 bytes)", valueUTF8: true},
		// Not UTF-8 at all: cut at the limit, escaped by %q.
		{name: "binary", in: strings.Repeat("\xff", 300), quote: `"` + strings.Repeat(`\xff`, MaxQuoted) + `"…(300 bytes)`,
			clip: strings.Repeat("\xff", MaxQuoted) + "…(300 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quote(tt.in); got != tt.quote {
				t.Errorf("Quote = %.80q… (%d bytes), want %.80q… (%d bytes)", got, len(got), tt.quote, len(tt.quote))
			}
			got := Clip(tt.in)
			if got != tt.clip {
				t.Errorf("Clip = %.80q… (%d bytes), want %.80q… (%d bytes)", got, len(got), tt.clip, len(tt.clip))
			}
			if tt.valueUTF8 && !utf8.ValidString(got) {
				t.Errorf("Clip cut a character: %q", got)
			}
		})
	}
	// Typed strings quote as their text.
	if got := Quote(typed("user")); got != `"user"` {
		t.Errorf("Quote(typed(\"user\")) = %s", got)
	}
}

func TestBounded(t *testing.T) {
	short := &Error{Class: ClassInvalid, Param: "model", Message: "model is required"}
	if short.Bounded() != short {
		t.Error("a short error is copied; want it returned as is")
	}
	long := &Error{Class: ClassNotFound, Param: strings.Repeat("p", 5000), Message: strings.Repeat("é", 1<<19)}
	b := long.Bounded()
	if b.Class != ClassNotFound || len(b.Message) > MaxMessage || !utf8.ValidString(b.Message) ||
		!strings.HasSuffix(b.Message, "…(1048576 bytes)") || len(b.Param) > MaxQuoted+len("…(5000 bytes)") {
		t.Fatalf("bounded: class %s, %d-byte message ending %q, %d-byte param", b.Class, len(b.Message), b.Message[len(b.Message)-20:], len(b.Param))
	}
	if len(long.Message) != 1<<20 {
		t.Error("Bounded changed the error it was called on")
	}
}

// typed is a string type, as the request vocabulary's roles are.
type typed string
