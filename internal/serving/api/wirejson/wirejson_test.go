package wirejson

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
)

type shared struct {
	Temperature *float64 `json:"temperature"`
}

type body struct {
	Model string   `json:"model"`
	Stop  []string `json:"stop"`
	Meta  struct {
		User string `json:"user"`
	} `json:"meta"`
	shared
}

func TestUnmarshal(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		param   string
		message string
	}{
		{"empty", " \n", "", "the request body is empty; send a JSON object"},
		{"not_json", `{"model":`, "", "the request body is not valid JSON: unexpected end of JSON input (at byte 9)"},
		{"not_object", `[1]`, "", "the request body must be a JSON object, not a JSON array"},
		{"string_field", `{"model":7}`, "model", "field model must be a string, not a JSON number"},
		{"array_field", `{"stop":"x"}`, "stop", "field stop must be an array, not a JSON string"},
		{"nested_field", `{"meta":{"user":true}}`, "meta.user", "field meta.user must be a string, not a JSON bool"},
		{"object_field", `{"meta":1}`, "meta", "field meta must be an object, not a JSON number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v body
			err := Unmarshal([]byte(tt.body), &v)
			e, ok := errors.AsType[*fault.Error](err)
			if !ok {
				t.Fatalf("Unmarshal(%q) = %v, want a *fault.Error", tt.body, err)
			}
			if e.Class != fault.ClassInvalid || e.Param != tt.param || e.Message != tt.message {
				t.Errorf("Unmarshal(%q) = {%s %q %q}, want {%s %q %q}", tt.body, e.Class, e.Param, e.Message, fault.ClassInvalid, tt.param, tt.message)
			}
		})
	}
	var v body
	if err := Unmarshal([]byte(`{"model":"m","temperature":0.5}`), &v); err != nil || v.Model != "m" || *v.Temperature != 0.5 {
		t.Errorf("Unmarshal of a valid body = %v, %+v", err, v)
	}
}

func TestUnmarshalDropsEmbeddedCommon(t *testing.T) {
	type common struct {
		TopP *float64 `json:"top_p"`
	}
	var v struct{ common }
	err := Unmarshal([]byte(`{"top_p":"high"}`), &v)
	e, ok := errors.AsType[*fault.Error](err)
	if !ok || e.Param != "top_p" || e.Message != "field top_p must be a number, not a JSON string" {
		t.Errorf("Unmarshal = %v, want field top_p named without the embedded struct", err)
	}
}

func TestExpects(t *testing.T) {
	tests := []struct {
		name string
		into any
		want string
	}{
		{"string", new(string), "a string"},
		{"bool", new(bool), "a boolean"},
		{"int64", new(int64), "an integer in range"},
		{"uint32", new(uint32), "an integer in range"},
		{"float64", new(float64), "a number"},
		{"slice", new([]int), "an array"},
		{"map", new(map[string]int), "an object"},
		{"struct", new(struct{}), "an object"},
		{"int8", new(int8), "a value of another type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := json.Unmarshal([]byte(`[{"a":1}]`), tt.into)
			if _, ok := tt.into.(*[]int); ok {
				err = json.Unmarshal([]byte(`"x"`), tt.into)
			}
			te, ok := errors.AsType[*json.UnmarshalTypeError](err)
			if !ok {
				t.Fatalf("json.Unmarshal into %T = %v, want a type error", tt.into, err)
			}
			if got := Expects(te); got != tt.want {
				t.Errorf("Expects(%v) = %q, want %q", te.Type, got, tt.want)
			}
		})
	}
	if got := Expects(&json.UnmarshalTypeError{Value: "number"}); got != "a value of another type" {
		t.Errorf("Expects with no type = %q", got)
	}
}

func TestIsNull(t *testing.T) {
	for _, raw := range []string{"", " ", "null", " null\n"} {
		if !IsNull(json.RawMessage(raw)) {
			t.Errorf("IsNull(%q) = false, want true", raw)
		}
	}
	for _, raw := range []string{"0", `""`, "{}", "[]", "nul", `"null"`} {
		if IsNull(json.RawMessage(raw)) {
			t.Errorf("IsNull(%q) = true, want false", raw)
		}
	}
}
