package supervise

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestParseRecord(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		ok    bool
		level slog.Level
		msg   string
		attrs string // the attributes as slog's text handler prints them
	}{
		{"info", `{"time":"2026-11-30T10:00:00Z","level":"INFO","msg":"ready","n":2}`, true, slog.LevelInfo, "ready", "n=2"},
		{"offset level", `{"level":"WARN+2","msg":"hot"}`, true, slog.LevelWarn + 2, "hot", ""},
		{"nested and ordered", `{"level":"ERROR","msg":"x","b":{"c":[1,"d"]},"a":true,"f":0.5}`, true, slog.LevelError, "x", "b=map[c:[1 d]] a=true f=0.5"},
		{"big integer", `{"level":"DEBUG","msg":"m","n":18446744073709551615}`, true, slog.LevelDebug, "m", "n=1.8446744073709552e+19"},
		{"plain text", `plain text`, false, 0, "", ""},
		{"no level", `{"msg":"x"}`, false, 0, "", ""},
		{"no msg", `{"level":"INFO"}`, false, 0, "", ""},
		{"bad level", `{"level":"LOUD","msg":"x"}`, false, 0, "", ""},
		{"level not a string", `{"level":4,"msg":"x"}`, false, 0, "", ""},
		{"broken json", `{"level":"INFO","msg":"x"`, false, 0, "", ""},
		{"text after the object", `{"level":"INFO","msg":"x"} and more`, false, 0, "", ""},
		{"second object", `{"level":"INFO","msg":"x"}{}`, false, 0, "", ""},
		{"array", `["level","INFO"]`, false, 0, "", ""},
		{"empty object", `{}`, false, 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			level, msg, attrs, ok := parseRecord([]byte(tt.line))
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			var parts []string
			for _, a := range attrs {
				parts = append(parts, a.String())
			}
			if level != tt.level || msg != tt.msg || strings.Join(parts, " ") != tt.attrs {
				t.Fatalf("got %v %q [%s], want %v %q [%s]", level, msg, strings.Join(parts, " "), tt.level, tt.msg, tt.attrs)
			}
		})
	}
}

// TestRelogRoundTrip: what slog's JSON handler writes comes out of relog as
// the same record.
func TestRelogRoundTrip(t *testing.T) {
	var child bytes.Buffer
	clog := slog.New(slog.NewJSONHandler(&child, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clog.Warn("slow disk", "path", "/m/a b.gguf", "mib", 3.25, "quoted", `say "hi"`)
	clog.Debug("step", "n", int64(7))

	var direct, relogged bytes.Buffer
	strip := &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	want := slog.New(slog.NewTextHandler(&direct, strip))
	want.Warn("slow disk", "path", "/m/a b.gguf", "mib", 3.25, "quoted", `say "hi"`)
	want.Debug("step", "n", int64(7))
	got := slog.New(slog.NewTextHandler(&relogged, strip))
	for line := range strings.SplitSeq(strings.TrimSpace(child.String()), "\n") {
		relog(got, []byte(line))
	}
	if relogged.String() != direct.String() {
		t.Fatalf("relogged\n%s\nwant\n%s", relogged.String(), direct.String())
	}
}

// FuzzParseRecord: no line makes the parser panic, and what it accepts has
// a message and a level slog can print.
func FuzzParseRecord(f *testing.F) {
	for _, s := range []string{`{"level":"INFO","msg":"x","a":1}`, `{"level":"DEBUG-4","msg":""}`, `{`, `plain`, `{"level":"INFO","msg":"x","level":"WARN"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		level, _, _, ok := parseRecord(line)
		if ok && level.String() == "" {
			t.Fatal("accepted a record with no printable level")
		}
	})
}
