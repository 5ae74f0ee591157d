package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Object is a JSON object that keeps its key order. Templates print tool
// schemas and tool-call arguments with tojson, and Python dicts keep
// insertion order, so the order must survive into the render.
type Object []Field

// Field is one key of an Object.
type Field struct {
	Key   string
	Value any
}

// Get returns the value of key (the last one, as Python's json does).
func (o Object) Get(key string) (any, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].Key == key {
			return o[i].Value, true
		}
	}
	return nil, false
}

// ObjectFromMap converts a Go map to an Object with its keys sorted: a Go map
// has no order of its own, so sorting is the only deterministic choice.
func ObjectFromMap(m map[string]any) Object {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	o := make(Object, 0, len(keys))
	for _, k := range keys {
		o = append(o, Field{Key: k, Value: m[k]})
	}
	return o
}

// DecodeJSON decodes one JSON value keeping object key order: objects become
// Object, arrays []any, numbers json.Number (so 1 and 1.0 stay distinct, as
// in Python), and the rest string, bool or nil.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, fmt.Errorf("chat: decode json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("chat: decode json: trailing data after value")
	}
	return v, nil
}

// DecodeObjects decodes a JSON array of objects (messages or tools); JSON
// null decodes to a nil slice.
func DecodeObjects(data []byte) ([]Object, error) {
	v, err := DecodeJSON(data)
	if err != nil {
		return nil, err
	}
	return objectList(v)
}

func objectList(v any) ([]Object, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("chat: want a JSON array of objects, got %s", jsonKind(v))
	}
	out := make([]Object, len(list))
	for i, item := range list {
		o, ok := item.(Object)
		if !ok {
			return nil, fmt.Errorf("chat: element %d: want a JSON object, got %s", i, jsonKind(item))
		}
		out[i] = o
	}
	return out, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case Object:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := Object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %v, not a string", kt)
				}
				val, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o = append(o, Field{Key: key, Value: val})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			list := []any{}
			for dec.More() {
				val, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, val)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return list, nil
		}
		return nil, fmt.Errorf("unexpected delimiter %v", t)
	default:
		return t, nil
	}
}

// ValueError reports a Go value that has no template equivalent.
type ValueError struct {
	Path string // where in the input, e.g. messages[2].tool_calls
	Type string // the Go type found
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("chat: %s: cannot pass a %s to a template", e.Path, e.Type)
}

// toValue converts input data to the engine's values, keeping Object order.
// Map keys are sorted (maps have no order); numbers follow Python: integers
// stay integers, json.Number with a point or exponent becomes a float.
func toValue(v any, path string) (jinja.Value, error) {
	switch x := v.(type) {
	case nil:
		return jinja.None(), nil
	case jinja.Value:
		return x, nil
	case string:
		return jinja.NewString(x), nil
	case bool:
		return jinja.NewBool(x), nil
	case json.Number:
		return numberValue(x, path)
	case float64:
		return jinja.NewFloat(x), nil
	case float32:
		return jinja.NewFloat(float64(x)), nil
	case Object:
		d := jinja.NewDict()
		dict := d.AsDict()
		for _, f := range x {
			fv, err := toValue(f.Value, path+"."+f.Key)
			if err != nil {
				return jinja.Value{}, err
			}
			dict.Set(f.Key, fv)
		}
		return d, nil
	case map[string]any:
		return toValue(ObjectFromMap(x), path)
	case []any:
		items := make([]jinja.Value, len(x))
		for i, item := range x {
			iv, err := toValue(item, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return jinja.Value{}, err
			}
			items[i] = iv
		}
		return jinja.NewList(items), nil
	}
	return reflectValue(v, path)
}

// reflectValue handles the remaining integer kinds and typed slices
// ([]Object, []string, ...), so callers need not box everything in []any.
func reflectValue(v any, path string) (jinja.Value, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return jinja.NewInt(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return jinja.NewFloat(float64(u)), nil
		}
		return jinja.NewInt(int64(u)), nil
	case reflect.Slice:
		items := make([]jinja.Value, rv.Len())
		for i := range items {
			iv, err := toValue(rv.Index(i).Interface(), fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return jinja.Value{}, err
			}
			items[i] = iv
		}
		return jinja.NewList(items), nil
	}
	return jinja.Value{}, &ValueError{Path: path, Type: fmt.Sprintf("%T", v)}
}

func numberValue(n json.Number, path string) (jinja.Value, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return jinja.NewInt(i), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return jinja.Value{}, &ValueError{Path: path, Type: "number " + strconv.Quote(s)}
	}
	return jinja.NewFloat(f), nil
}
