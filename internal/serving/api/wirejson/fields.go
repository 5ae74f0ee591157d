package wirejson

import (
	"bytes"
	"encoding/json"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

// The fields below come in the same shapes in several wire formats; param
// names the field in the client's terms ("messages[0].tool_calls[1]
// .function.arguments") and every error is a *fault.Error naming it.

// String decodes a JSON string value.
func String(raw json.RawMessage, param string) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fault.ParamErrorf(param, "%s is not a valid JSON string: %v", param, err)
	}
	return s, nil
}

// Object returns a JSON object value as compact text; null or absent is
// the empty object.
func Object(raw json.RawMessage, param string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if IsNull(raw) {
		return "{}", nil
	}
	var buf bytes.Buffer
	if raw[0] != '{' || json.Compact(&buf, raw) != nil {
		return "", fault.ParamErrorf(param, "%s must be a JSON object", param)
	}
	return buf.String(), nil
}

// Arguments returns a tool call's arguments in OpenAI's form: a string
// holding the JSON object's text, passed on as sent, or, leniently, the
// object itself (compacted); null or absent means none ("{}").
func Arguments(raw json.RawMessage, param string) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case IsNull(raw):
		return "{}", nil
	case raw[0] == '"':
		return String(raw, param)
	case raw[0] == '{':
		return Object(raw, param)
	}
	return "", fault.ParamErrorf(param, "%s must be a string holding a JSON object", param)
}

// Stop returns stop sequences sent as null, one string or an array of
// strings, at most request.MaxStopSequences of them.
func Stop(raw json.RawMessage, param string) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if IsNull(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		s, err := String(raw, param)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fault.ParamErrorf(param, "%s must be a string or an array of strings", param)
	}
	if len(list) > request.MaxStopSequences {
		return nil, fault.ParamErrorf(param, "at most %d stop sequences are allowed, got %d", request.MaxStopSequences, len(list))
	}
	return list, nil
}

// Schema returns a tool's JSON Schema as sent: nil when it is null or
// absent, and an error when it is not a JSON object.
func Schema(raw json.RawMessage, param string) (json.RawMessage, error) {
	if IsNull(raw) {
		return nil, nil
	}
	if bytes.TrimSpace(raw)[0] != '{' {
		return nil, fault.ParamErrorf(param, "%s must be a JSON Schema object", param)
	}
	return raw, nil
}

// ByteInts is a token's UTF-8 bytes as the integers the logprobs fields
// carry: b when the runner reported them, else the token text's bytes.
func ByteInts(b []byte, token string) []int {
	if b == nil {
		b = []byte(token)
	}
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}
