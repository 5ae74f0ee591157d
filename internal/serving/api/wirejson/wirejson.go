// Package wirejson decodes the JSON request bodies of the wire-format
// translators (api/openai, api/anthropic, api/ollama, api/responses), words
// encoding/json's errors as *fault.Error values a client can act on, and
// reads the fields those formats share in the same shapes: tool-call
// arguments, stop sequences, tool schemas, logprob bytes.
// It is pure: no I/O, no state, and every function is safe for concurrent
// use. It imports no net/http (a test enforces that); the translators under
// internal/serving/api are its only intended importers.
package wirejson

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/skulk/skulk/internal/platform/fault"
)

// Unmarshal decodes body into v and turns encoding/json's errors into
// messages a client can act on: an empty body, invalid JSON, a body that is
// not an object, and a field of the wrong JSON type (a *fault.Error naming
// the field) each get their own message.
func Unmarshal(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return fault.Errorf(fault.ClassInvalid, "the request body is empty; send a JSON object")
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	if syn, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fault.Errorf(fault.ClassInvalid, "the request body is not valid JSON: %s (at byte %d)", syn.Error(), syn.Offset)
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return fault.Errorf(fault.ClassInvalid, "the request body must be a JSON object, not a JSON %s", fault.Clip(te.Value))
		}
		// encoding/json names an embedded struct in the path; the
		// translators that share fields embed them as a struct named
		// common, which clients never see.
		field := fault.Clip(strings.TrimPrefix(te.Field, "common."))
		return fault.ParamErrorf(field, "field %s must be %s, not a JSON %s", field, Expects(te), fault.Clip(te.Value))
	}
	return fault.Errorf(fault.ClassInvalid, "the request body cannot be decoded: %v", err)
}

// Expects says in JSON terms what the Go value behind a type error expects:
// "a string", "an integer in range", "an object" and so on.
func Expects(te *json.UnmarshalTypeError) string {
	if te.Type == nil {
		return "a value of another type"
	}
	switch te.Type.Kind().String() {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32", "uint64", "uint", "uint32":
		return "an integer in range"
	case "float64", "float32":
		return "a number"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "a value of another type"
}

// IsNull reports whether raw is absent or the JSON literal null.
func IsNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}
