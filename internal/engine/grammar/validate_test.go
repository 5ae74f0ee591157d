package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is an independent reference: a validator for the supported
// subset that works on the decoded schema and value, sharing no code with
// the compiler or the matcher.

// decodeJSON decodes one JSON value keeping numbers exact, rejecting
// trailing data.
func decodeJSON(text []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data")
	}
	return v, nil
}

// validateText parses text and validates it against schema (JSON text).
func validateText(schema string, text []byte) error {
	if !json.Valid(text) {
		return fmt.Errorf("not valid JSON")
	}
	sch, err := decodeJSON([]byte(schema))
	if err != nil {
		return fmt.Errorf("schema: %v", err)
	}
	v, err := decodeJSON(text)
	if err != nil {
		return err
	}
	return validateValue(sch, sch, v, "")
}

func validateValue(doc, sch, v any, at string) error {
	switch s := sch.(type) {
	case bool:
		if !s {
			return fmt.Errorf("%s: false schema", at)
		}
		return nil
	case map[string]any:
		return validateObject(doc, s, v, at)
	}
	return fmt.Errorf("%s: bad schema %T", at, sch)
}

func refTarget(doc any, ref string) (any, error) {
	ref, err := url.PathUnescape(strings.TrimPrefix(ref, "#"))
	if err != nil {
		return nil, err
	}
	cur := doc
	if ref == "" {
		return doc, nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("bad $ref %q", ref)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("bad $ref %q", ref)
		}
	}
	return cur, nil
}

func typeOf(v any) []string {
	switch v := v.(type) {
	case nil:
		return []string{"null"}
	case bool:
		return []string{"boolean"}
	case string:
		return []string{"string"}
	case []any:
		return []string{"array"}
	case map[string]any:
		return []string{"object"}
	case json.Number:
		r, ok := new(big.Rat).SetString(v.String())
		if ok && r.IsInt() {
			return []string{"number", "integer"}
		}
		return []string{"number"}
	}
	return nil
}

// equalJSON compares decoded values, numbers by exact value.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		ra, _ := new(big.Rat).SetString(a.String())
		rb, _ := new(big.Rat).SetString(bn.String())
		return ra != nil && rb != nil && ra.Cmp(rb) == 0
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], bl[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !equalJSON(av, bv) {
				return false
			}
		}
		return true
	}
	return a == b
}

func num(v any) int {
	n, _ := v.(json.Number)
	f, _ := strconv.ParseFloat(n.String(), 64)
	return int(f)
}

func validateObject(doc any, s map[string]any, v any, at string) error {
	if ref, ok := s["$ref"].(string); ok {
		target, err := refTarget(doc, ref)
		if err != nil {
			return err
		}
		return validateValue(doc, target, v, at)
	}
	if t, ok := s["type"]; ok {
		var want []string
		switch t := t.(type) {
		case string:
			want = []string{t}
		case []any:
			for _, e := range t {
				if e, ok := e.(string); ok {
					want = append(want, e)
				}
			}
		}
		if nb, _ := s["nullable"].(bool); nb {
			want = append(want, "null")
		}
		ok := false
		for _, have := range typeOf(v) {
			for _, w := range want {
				ok = ok || have == w
			}
		}
		if !ok {
			return fmt.Errorf("%s: type %v, want %v", at, typeOf(v), want)
		}
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || equalJSON(x, v)
		}
		if nb, _ := s["nullable"].(bool); nb && v == nil {
			found = true
		}
		if !found {
			return fmt.Errorf("%s: %v not in enum", at, v)
		}
	}
	if c, ok := s["const"]; ok && !equalJSON(c, v) {
		return fmt.Errorf("%s: %v is not const %v", at, v, c)
	}
	if list, ok := s["anyOf"].([]any); ok {
		var errs []string
		for _, alt := range list {
			if err := validateValue(doc, alt, v, at); err == nil {
				errs = nil
				break
			} else {
				errs = append(errs, err.Error())
			}
		}
		if errs != nil {
			return fmt.Errorf("%s: no anyOf alternative: %v", at, errs)
		}
	}
	if list, ok := s["oneOf"].([]any); ok {
		n := 0
		for _, alt := range list {
			if validateValue(doc, alt, v, at) == nil {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: %d oneOf alternatives match", at, n)
		}
	}
	if list, ok := s["allOf"].([]any); ok {
		for _, alt := range list {
			if err := validateValue(doc, alt, v, at); err != nil {
				return err
			}
		}
	}
	switch v := v.(type) {
	case string:
		n := utf8.RuneCountInString(v)
		if m, ok := s["minLength"]; ok && n < num(m) {
			return fmt.Errorf("%s: %q shorter than %v", at, v, m)
		}
		if m, ok := s["maxLength"]; ok && n > num(m) {
			return fmt.Errorf("%s: %q longer than %v", at, v, m)
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := v[fmt.Sprint(r)]; !ok {
					return fmt.Errorf("%s: missing required %q", at, r)
				}
			}
		}
		for k, pv := range v {
			if ps, ok := props[k]; ok {
				if err := validateValue(doc, ps, pv, at+"/"+k); err != nil {
					return err
				}
				continue
			}
			if ap, ok := s["additionalProperties"]; ok {
				if err := validateValue(doc, ap, pv, at+"/"+k); err != nil {
					return fmt.Errorf("additional property %q: %w", k, err)
				}
			}
		}
	case []any:
		if m, ok := s["minItems"]; ok && len(v) < num(m) {
			return fmt.Errorf("%s: %d items, fewer than %v", at, len(v), m)
		}
		if m, ok := s["maxItems"]; ok && len(v) > num(m) {
			return fmt.Errorf("%s: %d items, more than %v", at, len(v), m)
		}
		prefix, _ := s["prefixItems"].([]any)
		rest, hasRest := s["items"]
		if tuple, ok := rest.([]any); ok {
			prefix = tuple
			rest, hasRest = s["additionalItems"]
		}
		for i, e := range v {
			var is any = true
			switch {
			case i < len(prefix):
				is = prefix[i]
			case hasRest:
				is = rest
			}
			if err := validateValue(doc, is, e, fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
