package wirejson

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
)

// wantParamError fails unless err is an invalid-request *fault.Error naming
// param whose message holds msg.
func wantParamError(t *testing.T, err error, param, msg string) {
	t.Helper()
	e, ok := errors.AsType[*fault.Error](err)
	if !ok || e.Class != fault.ClassInvalid || e.Param != param || !strings.Contains(e.Message, msg) {
		t.Fatalf("error = %v, want an invalid-request error on %s saying %q", err, param, msg)
	}
}

func TestArgumentsAndObject(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		args    string // Arguments' answer, or its error message
		object  string // Object's answer, or its error message
		argsErr bool
		objErr  bool
	}{
		{"absent", "", "{}", "{}", false, false},
		{"null", "null", "{}", "{}", false, false},
		{"object_compacted", `{ "a" : [1, 2] }`, `{"a":[1,2]}`, `{"a":[1,2]}`, false, false},
		{"string_as_sent", `"{ \"a\": 1 }"`, `{ "a": 1 }`, "must be a JSON object", false, true},
		{"array", `[1]`, "must be a string holding a JSON object", "must be a JSON object", true, true},
		{"number", `7`, "must be a string holding a JSON object", "must be a JSON object", true, true},
		{"broken_object", `{"a":`, "must be a JSON object", "must be a JSON object", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Arguments(json.RawMessage(tt.raw), "f.arguments")
			if tt.argsErr {
				wantParamError(t, err, "f.arguments", tt.args)
			} else if err != nil || got != tt.args {
				t.Errorf("Arguments(%s) = %q, %v; want %q", tt.raw, got, err, tt.args)
			}
			got, err = Object(json.RawMessage(tt.raw), "f.input")
			if tt.objErr {
				wantParamError(t, err, "f.input", tt.object)
			} else if err != nil || got != tt.object {
				t.Errorf("Object(%s) = %q, %v; want %q", tt.raw, got, err, tt.object)
			}
		})
	}
}

func TestString(t *testing.T) {
	if s, err := String(json.RawMessage(`"a\nb"`), "p"); err != nil || s != "a\nb" {
		t.Errorf("String = %q, %v", s, err)
	}
	_, err := String(json.RawMessage(`"\x"`), "p")
	wantParamError(t, err, "p", "p is not a valid JSON string")
}

func TestStop(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want []string
		err  string
	}{
		{"absent", "", nil, ""},
		{"null", "null", nil, ""},
		{"one_string", `"\n\n"`, []string{"\n\n"}, ""},
		{"array", `["a","b"]`, []string{"a", "b"}, ""},
		{"empty_array", `[]`, []string{}, ""},
		{"numbers", `[1]`, nil, "options.stop must be a string or an array of strings"},
		{"object", `{}`, nil, "options.stop must be a string or an array of strings"},
		{"too_many", `["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]`, nil, "at most 16 stop sequences are allowed, got 17"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Stop(json.RawMessage(tt.raw), "options.stop")
			if tt.err != "" {
				wantParamError(t, err, "options.stop", tt.err)
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("Stop(%s) = %q, %v; want %q", tt.raw, got, err, tt.want)
			}
		})
	}
}

func TestSchema(t *testing.T) {
	for _, raw := range []string{"", "null"} {
		if got, err := Schema(json.RawMessage(raw), "p"); got != nil || err != nil {
			t.Errorf("Schema(%q) = %s, %v; want nil, nil", raw, got, err)
		}
	}
	obj := json.RawMessage(`{"type":"object"}`)
	if got, err := Schema(obj, "p"); err != nil || string(got) != string(obj) {
		t.Errorf("Schema(object) = %s, %v; want it as sent", got, err)
	}
	_, err := Schema(json.RawMessage(`"object"`), "tools[0].parameters")
	wantParamError(t, err, "tools[0].parameters", "tools[0].parameters must be a JSON Schema object")
}

func TestByteInts(t *testing.T) {
	if got := ByteInts([]byte{0xe2, 0x82}, "ignored"); !slices.Equal(got, []int{0xe2, 0x82}) {
		t.Errorf("ByteInts with bytes = %v", got)
	}
	if got := ByteInts(nil, "hé"); !slices.Equal(got, []int{'h', 0xc3, 0xa9}) {
		t.Errorf("ByteInts of the text = %v", got)
	}
	if got := ByteInts([]byte{}, "x"); len(got) != 0 || got == nil {
		t.Errorf("ByteInts of no bytes = %#v, want an empty, non-nil list", got)
	}
}
