package output

import (
	"bytes"
	"encoding/json"
	"strings"
)

// toolSet is the set of tool names the request offered.
type toolSet map[string]struct{}

func (ts toolSet) offered(name string) bool {
	_, ok := ts[name]
	return ok
}

// parseTagged reads the body of a <tool_call> block: Hermes JSON,
// Qwen3-Coder XML or GLM's arg_key/arg_value pairs, whichever it looks like.
func (ts toolSet) parseTagged(inner string) (name, args string, ok bool) {
	body := strings.TrimSpace(inner)
	switch {
	case strings.HasPrefix(body, "{"):
		return ts.parseJSONCall(body)
	case strings.HasPrefix(body, "<function="):
		return ts.parseXMLCall(body)
	}
	return ts.parseGLMCall(body)
}

// parseGLMCall reads GLM-4.5/4.6's form (their templates print
// <tool_call> too, so they share the Hermes dialect):
//
//	NAME
//	<arg_key>K</arg_key>
//	<arg_value>V</arg_value>
//
// Values are read as parseXMLCall reads them (the template prints
// non-strings as JSON).
func (ts toolSet) parseGLMCall(body string) (name, args string, ok bool) {
	i := strings.IndexAny(body, "<\n")
	if i < 0 {
		i = len(body)
	}
	name, s := strings.TrimSpace(body[:i]), body[i:]
	if name == "" || !ts.offered(name) {
		return "", "", false
	}
	var out strings.Builder
	out.WriteByte('{')
	seen := map[string]bool{}
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		if s == "" {
			break
		}
		rest, isKey := strings.CutPrefix(s, "<arg_key>")
		if !isKey {
			return "", "", false
		}
		key, rest, found := strings.Cut(rest, "</arg_key>")
		if !found || seen[key] {
			return "", "", false
		}
		seen[key] = true
		rest, isValue := strings.CutPrefix(strings.TrimLeft(rest, " \t\r\n"), "<arg_value>")
		if !isValue {
			return "", "", false
		}
		value, after, found := strings.Cut(rest, "</arg_value>")
		if !found {
			return "", "", false
		}
		if len(seen) > 1 {
			out.WriteByte(',')
		}
		out.WriteString(jsonString(key))
		out.WriteByte(':')
		out.WriteString(xmlValueJSON(value))
		s = after
	}
	out.WriteByte('}')
	args, ok = normalizeArgs(json.RawMessage(out.String()))
	return name, args, ok
}

// parseJSONCall reads one call object: {"name": ..., "arguments": {...}}
// ("parameters" is Llama's spelling; other fields such as "id" and "type"
// are ignored). The call must name an offered tool.
func (ts toolSet) parseJSONCall(raw string) (name, args string, ok bool) {
	var obj struct {
		Name       *string         `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if json.Unmarshal([]byte(raw), &obj) != nil || obj.Name == nil || !ts.offered(*obj.Name) {
		return "", "", false
	}
	a := obj.Arguments
	if a == nil {
		a = obj.Parameters
	} else if obj.Parameters != nil {
		return "", "", false // two argument objects: not a call we can trust
	}
	args, ok = normalizeArgs(a)
	return *obj.Name, args, ok
}

// normalizeArgs turns the arguments value into a compact JSON object:
// missing or null is {}, an object is compacted, and a string holding a
// JSON object (some models double-encode) is unwrapped.
func normalizeArgs(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", true
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		raw = bytes.TrimSpace([]byte(s))
	}
	if len(raw) == 0 || raw[0] != '{' {
		return "", false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return "", false
	}
	return buf.String(), true
}

// parseXMLCall reads Qwen3-Coder's form:
//
//	<function=NAME>
//	<parameter=P>
//	value
//	</parameter>
//	</function>
//
// Values that are JSON objects, arrays, numbers, booleans or null keep
// their JSON type; anything else becomes a JSON string. (The request's
// parameter schema is not consulted, so "42" meant as a string comes out
// as a number.)
func (ts toolSet) parseXMLCall(body string) (name, args string, ok bool) {
	s, found := strings.CutPrefix(body, "<function=")
	if !found {
		return "", "", false
	}
	name, s, found = cutTagName(s)
	if !found || !ts.offered(name) {
		return "", "", false
	}
	var out strings.Builder
	out.WriteByte('{')
	seen := map[string]bool{}
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		if rest, closed := strings.CutPrefix(s, "</function>"); closed {
			if strings.TrimSpace(rest) != "" {
				return "", "", false
			}
			break
		}
		if s == "" {
			break // a missing </function> at the very end is forgiven
		}
		rest, isParam := strings.CutPrefix(s, "<parameter=")
		if !isParam {
			return "", "", false
		}
		pname, rest, found := cutTagName(rest)
		if !found || seen[pname] {
			return "", "", false
		}
		seen[pname] = true
		value, after, found := strings.Cut(rest, "</parameter>")
		if !found {
			return "", "", false
		}
		value = strings.TrimPrefix(value, "\n")
		value = strings.TrimSuffix(value, "\n")
		if len(seen) > 1 {
			out.WriteByte(',')
		}
		out.WriteString(jsonString(pname))
		out.WriteByte(':')
		out.WriteString(xmlValueJSON(value))
		s = after
	}
	out.WriteByte('}')
	args, ok = normalizeArgs(json.RawMessage(out.String()))
	return name, args, ok
}

// cutTagName splits "NAME>rest" into NAME and rest. NAME must be non-empty
// and on one line.
func cutTagName(s string) (name, rest string, ok bool) {
	i := strings.IndexByte(s, '>')
	if i <= 0 || strings.ContainsAny(s[:i], "<\n") {
		return "", "", false
	}
	return strings.TrimSpace(s[:i]), s[i+1:], true
}

// xmlValueJSON encodes one XML parameter value as JSON.
func xmlValueJSON(v string) string {
	t := strings.TrimSpace(v)
	if t != "" && strings.IndexByte("{[-0123456789tfn", t[0]) >= 0 && json.Valid([]byte(t)) {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(t)) == nil {
			return buf.String()
		}
	}
	return jsonString(v)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// splitArray returns the raw text of each element of a JSON array.
func splitArray(raw string) ([]string, bool) {
	var items []json.RawMessage
	if json.Unmarshal([]byte(raw), &items) != nil {
		return nil, false
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out, true
}
