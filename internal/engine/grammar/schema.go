package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Matcher is a compiled grammar: the set of JSON texts a schema accepts,
// written compactly (see the package doc for the whitespace policy). It is
// immutable and safe for concurrent use.
type Matcher struct {
	root  *node
	notes []string
	nodes int
}

// Notes lists what the compiler ignored on purpose (format, unknown
// keywords), one sentence each, in schema order.
func (m *Matcher) Notes() []string { return slices.Clone(m.notes) }

// Compile limits. A schema comes from a client, so its cost is bounded.
const (
	maxDepth        = 64      // nested subschemas, $ref hops included
	maxNodes        = 1 << 14 // compiled nodes
	maxLiteralBytes = 1 << 20 // encoded enum/const values
	maxMinBound     = 1 << 16 // largest minItems / minLength accepted
	maxMaxBound     = 1 << 30 // a larger maxItems / maxLength means unbounded
)

// JSONObject returns the grammar of response_format "json_object": any JSON
// object.
func JSONObject() *Matcher {
	c := newCompiler(nil)
	anyv := c.anyValue()
	root := &node{kind: kindRoot, id: -1, alts: []*node{anyv.alts[0]}}
	return &Matcher{root: root, nodes: c.nodes}
}

// Compile compiles a JSON Schema (the subset in the package doc) given as
// JSON text. A refused schema yields a *SchemaError.
func Compile(schema []byte) (*Matcher, error) {
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return nil, &SchemaError{Class: ErrInvalidSchema, Detail: "not JSON: " + err.Error()}
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, &SchemaError{Class: ErrInvalidSchema, Detail: "trailing data after the schema"}
	}
	c := newCompiler(doc)
	n, err := c.compile(doc, "", 0)
	if err != nil {
		return nil, err
	}
	if n == nil {
		if c.unsat != nil {
			return nil, c.unsat
		}
		return nil, &SchemaError{Class: ErrUnsatisfiable, Detail: "no value matches the schema"}
	}
	root := &node{kind: kindRoot, id: -1, alts: []*node{n}}
	return &Matcher{root: root, notes: c.notes, nodes: c.nodes}, nil
}

type compiler struct {
	doc      any
	nodes    int
	litBytes int
	refs     map[string]*node // compiled $ref targets (nil: matches nothing)
	done     map[string]bool
	active   map[string]bool // $ref targets being compiled, to refuse cycles
	notes    []string
	anyv     *node
	unsat    *SchemaError // the last subschema found to match nothing
}

func newCompiler(doc any) *compiler {
	return &compiler{doc: doc, refs: map[string]*node{}, done: map[string]bool{}, active: map[string]bool{}}
}

func (c *compiler) newNode(k kind, path string) (*node, error) {
	if c.nodes >= maxNodes {
		return nil, &SchemaError{Class: ErrTooLarge, Path: path, Detail: fmt.Sprintf("more than %d compiled nodes", maxNodes)}
	}
	c.nodes++
	return &node{kind: k, id: int32(c.nodes), maxItems: -1, maxLen: -1}, nil
}

// anyValue is the node of every JSON value; it is cyclic (objects and
// arrays hold any values) and shared by the whole compile.
func (c *compiler) anyValue() *node {
	if c.anyv != nil {
		return c.anyv
	}
	mk := func(k kind) *node {
		c.nodes++
		return &node{kind: k, id: int32(c.nodes), maxItems: -1, maxLen: -1}
	}
	u := mk(kindUnion)
	obj := mk(kindObject)
	obj.extra = u
	arr := mk(kindArray)
	arr.items = u
	lit := mk(kindLiteral)
	lit.lit = newTrie([]string{"true", "false", "null"}, false)
	u.alts = []*node{obj, arr, mk(kindString), mk(kindNumber), lit}
	c.anyv = u
	return u
}

// noMatch records that the subschema at path matches nothing. Callers
// record after their children, so the last record names the outermost
// cause (minItems rather than the items: false behind it).
func (c *compiler) noMatch(path, keyword, detail string) {
	c.unsat = &SchemaError{Class: ErrUnsatisfiable, Path: path, Keyword: keyword, Detail: detail}
}

func (c *compiler) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// Keyword classes.
var (
	annotationKeywords = []string{"title", "description", "default", "examples", "example",
		"$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "deprecated", "readOnly", "writeOnly",
		"contentMediaType", "contentEncoding", "contentSchema", "discriminator", "xml",
		"externalDocs", "$defs", "definitions"}
	unsupportedKeywords = []string{"pattern", "patternProperties", "minimum", "maximum",
		"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minProperties", "maxProperties",
		"contains", "minContains", "maxContains", "propertyNames", "dependentRequired",
		"dependentSchemas", "dependencies", "if", "then", "else", "not", "unevaluatedProperties",
		"unevaluatedItems", "$dynamicRef", "$recursiveRef"}
	// assertion keywords the compiler understands, grouped by the instance
	// type they constrain ("" for any type)
	keywordFamily = map[string]string{
		"type": "", "enum": "", "const": "", "anyOf": "", "oneOf": "", "allOf": "", "$ref": "",
		"nullable": "", "format": "", "uniqueItems": "",
		"properties": "object", "required": "object", "additionalProperties": "object",
		"items": "array", "prefixItems": "array", "additionalItems": "array", "minItems": "array", "maxItems": "array",
		"minLength": "string", "maxLength": "string",
	}
)

func (c *compiler) compile(s any, path string, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, &SchemaError{Class: ErrTooLarge, Path: path, Detail: fmt.Sprintf("schemas nested deeper than %d", maxDepth)}
	}
	var v map[string]any
	switch s := s.(type) {
	case bool:
		if s {
			return c.anyValue(), nil
		}
		c.noMatch(path, "", "schema is false")
		return nil, nil
	case map[string]any:
		v = s
	default:
		return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Detail: "a schema must be an object or a boolean"}
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var asserts []string // assertion keywords present, sorted
	for _, k := range keys {
		switch {
		case slices.Contains(annotationKeywords, k) || strings.HasPrefix(k, "x-"):
		case slices.Contains(unsupportedKeywords, k):
			return nil, &SchemaError{Class: ErrUnsupported, Path: path, Keyword: k, Detail: "keyword not supported"}
		case k == "format":
			if f, ok := v[k].(string); ok {
				c.note("%s: format %q is not enforced", pathOrRoot(path), f)
			}
		case k == "uniqueItems":
			if b, ok := v[k].(bool); !ok {
				return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: k, Detail: "must be a boolean"}
			} else if b {
				return nil, &SchemaError{Class: ErrUnsupported, Path: path, Keyword: k, Detail: "uniqueItems true is not supported"}
			}
		case k == "additionalItems":
			if _, tuple := v["items"].([]any); tuple {
				asserts = append(asserts, k)
			}
		default:
			if _, ok := keywordFamily[k]; ok {
				asserts = append(asserts, k)
			} else {
				c.note("%s: unknown keyword %q ignored", pathOrRoot(path), k)
			}
		}
	}
	only := func(kw string, allowed ...string) error {
		for _, a := range asserts {
			if a != kw && !slices.Contains(allowed, a) {
				return &SchemaError{Class: ErrUnsupported, Path: path, Keyword: kw, Detail: fmt.Sprintf("%s combined with %s is not supported", kw, a)}
			}
		}
		return nil
	}
	switch {
	case slices.Contains(asserts, "$ref"):
		if err := only("$ref"); err != nil {
			return nil, err
		}
		return c.ref(v["$ref"], path, depth)
	case slices.Contains(asserts, "allOf"):
		if err := only("allOf"); err != nil {
			return nil, err
		}
		all, ok := v["allOf"].([]any)
		if !ok || len(all) == 0 {
			return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "allOf", Detail: "must be a non-empty array"}
		}
		if len(all) > 1 {
			return nil, &SchemaError{Class: ErrUnsupported, Path: path, Keyword: "allOf", Detail: "allOf with more than one schema is not supported"}
		}
		return c.compile(all[0], path+"/allOf/0", depth+1)
	case slices.Contains(asserts, "anyOf") || slices.Contains(asserts, "oneOf"):
		kw := "anyOf"
		if slices.Contains(asserts, "oneOf") {
			kw = "oneOf"
			if err := only(kw); err != nil {
				return nil, err
			}
		} else if err := only(kw); err != nil {
			return nil, err
		}
		return c.union(v[kw], path, kw, depth)
	case slices.Contains(asserts, "enum") || slices.Contains(asserts, "const"):
		if err := only("enum", "const", "type", "nullable"); err != nil {
			return nil, err
		}
		return c.literal(v, path)
	}
	types, err := c.types(v, asserts, path)
	if err != nil {
		return nil, err
	}
	if types == nil {
		return c.anyValue(), nil
	}
	var alts []*node
	for _, t := range types {
		var n *node
		var err error
		switch t {
		case "null", "boolean":
			n, err = c.newNode(kindLiteral, path)
			if err == nil {
				lits, vals := []string{"null"}, []any{nil}
				if t == "boolean" {
					lits, vals = []string{"true", "false"}, []any{true, false}
				}
				n.lit, n.litVals = newTrie(lits, false), vals
			}
		case "integer":
			n, err = c.newNode(kindInteger, path)
		case "number":
			n, err = c.newNode(kindNumber, path)
		case "string":
			n, err = c.str(v, path)
		case "object":
			n, err = c.object(v, path, depth)
		case "array":
			n, err = c.array(v, path, depth)
		}
		if err != nil {
			return nil, err
		}
		if n != nil {
			alts = append(alts, n)
		}
	}
	if len(alts) == 0 && len(types) == 1 {
		return nil, nil // the type's own reason stands
	}
	return c.unionOf(alts, path)
}

func pathOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// types lists the instance types the schema admits, in a fixed order, or
// nil for every type. Without "type", the type is implied by the keyword
// families present (properties imply an object): a narrowing that keeps
// every generated value valid.
func (c *compiler) types(v map[string]any, asserts []string, path string) ([]string, error) {
	all := []string{"null", "boolean", "object", "array", "number", "integer", "string"}
	want := map[string]bool{}
	switch t := v["type"].(type) {
	case nil:
		if _, ok := v["type"]; ok {
			return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "type", Detail: "must be a string or an array of strings"}
		}
		for _, a := range asserts {
			if f := keywordFamily[a]; f != "" {
				want[f] = true
			}
		}
		if len(want) == 0 {
			return nil, nil
		}
	case string:
		want[t] = true
	case []any:
		if len(t) == 0 {
			return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "type", Detail: "empty type array"}
		}
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "type", Detail: "must be a string or an array of strings"}
			}
			want[s] = true
		}
	default:
		return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "type", Detail: "must be a string or an array of strings"}
	}
	for t := range want {
		if !slices.Contains(all, t) {
			return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "type", Detail: fmt.Sprintf("unknown type %q", t)}
		}
	}
	if nb, ok := v["nullable"]; ok {
		b, ok := nb.(bool)
		if !ok {
			return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "nullable", Detail: "must be a boolean"}
		}
		if b {
			want["null"] = true
		}
	}
	if want["number"] {
		delete(want, "integer") // every integer is a number
	}
	var out []string
	for _, t := range all {
		if want[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// unionOf makes one node of alternatives, flattening nested unions. No
// alternative means no match.
func (c *compiler) unionOf(alts []*node, path string) (*node, error) {
	switch len(alts) {
	case 0:
		c.noMatch(path, "", "no alternative matches anything")
		return nil, nil
	case 1:
		return alts[0], nil
	}
	u, err := c.newNode(kindUnion, path)
	if err != nil {
		return nil, err
	}
	for _, a := range alts {
		if a.kind == kindUnion {
			u.alts = append(u.alts, a.alts...)
		} else {
			u.alts = append(u.alts, a)
		}
	}
	return u, nil
}

func (c *compiler) union(raw any, path, kw string, depth int) (*node, error) {
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: kw, Detail: "must be a non-empty array"}
	}
	var alts []*node
	var at []int
	for i, s := range list {
		n, err := c.compile(s, fmt.Sprintf("%s/%s/%d", path, kw, i), depth+1)
		if err != nil {
			return nil, err
		}
		if n != nil {
			alts, at = append(alts, n), append(at, i)
		}
	}
	if kw == "oneOf" {
		// Enforced as anyOf, which is exact only for disjoint alternatives.
		for i := range alts {
			for j := i + 1; j < len(alts); j++ {
				if !disjoint(alts[i], alts[j]) {
					return nil, &SchemaError{Class: ErrUnsupported, Path: path, Keyword: kw,
						Detail: fmt.Sprintf("alternatives %d and %d may both match a value (only provably disjoint oneOf is supported; use anyOf)", at[i], at[j])}
				}
			}
		}
	}
	return c.unionOf(alts, path)
}

func (c *compiler) ref(raw any, path string, depth int) (*node, error) {
	ref, ok := raw.(string)
	if !ok {
		return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "$ref", Detail: "must be a string"}
	}
	if !strings.HasPrefix(ref, "#") {
		return nil, &SchemaError{Class: ErrUnsupported, Path: path, Keyword: "$ref", Detail: fmt.Sprintf("only local references (#/...) are supported, not %q", ref)}
	}
	ptr, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "$ref", Detail: fmt.Sprintf("bad escape in %q", ref)}
	}
	if c.done[ptr] {
		return c.refs[ptr], nil
	}
	if c.active[ptr] {
		return nil, &SchemaError{Class: ErrUnsupported, Path: path, Keyword: "$ref", Detail: fmt.Sprintf("recursive reference %q is not supported", ref)}
	}
	target, ok := resolvePointer(c.doc, ptr)
	if !ok {
		return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "$ref", Detail: fmt.Sprintf("%q points nowhere", ref)}
	}
	c.active[ptr] = true
	n, err := c.compile(target, ptr, depth+1)
	delete(c.active, ptr)
	if err != nil {
		return nil, err
	}
	c.refs[ptr], c.done[ptr] = n, true
	return n, nil
}

// resolvePointer follows an RFC 6901 JSON pointer ("" is the document).
func resolvePointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if ptr[0] != '/' {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// bound reads a non-negative integer keyword: -1 when absent; for a max
// keyword, values too large to matter become -1 (unbounded).
func bound(v map[string]any, kw, path string, isMax bool) (int32, error) {
	raw, ok := v[kw]
	if !ok {
		return -1, nil
	}
	bad := &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: kw, Detail: "must be a non-negative integer"}
	num, ok := raw.(json.Number)
	if !ok {
		return 0, bad
	}
	f, err := strconv.ParseFloat(num.String(), 64)
	if err != nil || f < 0 || f != float64(int64(f)) {
		return 0, bad
	}
	switch {
	case isMax && f > maxMaxBound:
		return -1, nil
	case !isMax && f > maxMinBound:
		return 0, &SchemaError{Class: ErrTooLarge, Path: path, Keyword: kw, Detail: fmt.Sprintf("%s above %d", kw, maxMinBound)}
	}
	return int32(f), nil
}

func (c *compiler) str(v map[string]any, path string) (*node, error) {
	lo, err := bound(v, "minLength", path, false)
	if err != nil {
		return nil, err
	}
	hi, err := bound(v, "maxLength", path, true)
	if err != nil {
		return nil, err
	}
	if hi >= 0 && lo > hi {
		c.noMatch(path, "minLength", "minLength above maxLength")
		return nil, nil
	}
	n, err := c.newNode(kindString, path)
	if err != nil {
		return nil, err
	}
	n.minLen, n.maxLen = max(lo, 0), hi
	if lo > 0 || hi >= 0 {
		n.lenCap = max(lo, hi, 1)
	}
	return n, nil
}

func (c *compiler) object(v map[string]any, path string, depth int) (*node, error) {
	n, err := c.newNode(kindObject, path)
	if err != nil {
		return nil, err
	}
	props := map[string]*node{}
	var names []string
	if raw, ok := v["properties"]; ok {
		pm, ok := raw.(map[string]any)
		if !ok {
			return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "properties", Detail: "must be an object"}
		}
		for name := range pm {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			p, err := c.compile(pm[name], path+"/properties/"+escapePointer(name), depth+1)
			if err != nil {
				return nil, err
			}
			props[name] = p
		}
	}
	n.extra = c.anyValue()
	if raw, ok := v["additionalProperties"]; ok {
		if n.extra, err = c.compile(raw, path+"/additionalProperties", depth+1); err != nil {
			return nil, err
		}
	}
	var required []string
	if raw, ok := v["required"]; ok {
		list, ok := raw.([]any)
		if !ok {
			return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "required", Detail: "must be an array of strings"}
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "required", Detail: "must be an array of strings"}
			}
			if _, declared := props[s]; !declared {
				if n.extra == nil {
					c.noMatch(path, "required", fmt.Sprintf("required property %q is forbidden by additionalProperties", s))
					return nil, nil
				}
				props[s] = n.extra
				names = append(names, s)
			}
			required = append(required, s)
		}
	}
	slices.Sort(names)
	enc := make([]string, len(names))
	for i, name := range names {
		enc[i] = encodeString(name)
		p := props[name]
		n.props = append(n.props, p)
		n.names = append(n.names, name)
		if p != nil {
			n.avail = n.avail.with(int32(i))
		}
		if slices.Contains(required, name) {
			if p == nil {
				c.noMatch(path+"/properties/"+escapePointer(name), "required", fmt.Sprintf("required property %q matches nothing", name))
				return nil, nil
			}
			n.required = n.required.with(int32(i))
		}
	}
	if len(names) > 0 {
		n.keys = newTrie(enc, true)
		for i, s := range n.keys.sub {
			n.keys.sub[i] = s.and(n.avail)
		}
		n.restrictKeys = n.extra != nil
	}
	return n, nil
}

// and returns s ∩ t.
func (s bitset) and(t bitset) bitset {
	out := make(bitset, min(len(s), len(t)))
	for i := range out {
		out[i] = s[i] & t[i]
	}
	return out
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (c *compiler) array(v map[string]any, path string, depth int) (*node, error) {
	n, err := c.newNode(kindArray, path)
	if err != nil {
		return nil, err
	}
	var prefix []any
	restKw := "items"
	if raw, ok := v["prefixItems"]; ok {
		if prefix, ok = raw.([]any); !ok {
			return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "prefixItems", Detail: "must be an array"}
		}
		if _, tuple := v["items"].([]any); tuple {
			return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "items", Detail: "an array of schemas cannot follow prefixItems"}
		}
	} else if tuple, ok := v["items"].([]any); ok {
		prefix, restKw = tuple, "additionalItems" // draft 4-7 tuple form
	}
	for i, s := range prefix {
		p, err := c.compile(s, fmt.Sprintf("%s/%s/%d", path, map[bool]string{true: "prefixItems", false: "items"}[restKw == "items"], i), depth+1)
		if err != nil {
			return nil, err
		}
		n.prefix = append(n.prefix, p)
	}
	n.items = c.anyValue()
	if raw, ok := v[restKw]; ok {
		if n.items, err = c.compile(raw, path+"/"+restKw, depth+1); err != nil {
			return nil, err
		}
	}
	lo, err := bound(v, "minItems", path, false)
	if err != nil {
		return nil, err
	}
	hi, err := bound(v, "maxItems", path, true)
	if err != nil {
		return nil, err
	}
	lo = max(lo, 0)
	// The first item that matches nothing caps the length.
	for i, p := range n.prefix {
		if p == nil && (hi < 0 || int32(i) < hi) {
			hi = int32(i)
		}
	}
	if n.items == nil && (hi < 0 || int32(len(n.prefix)) < hi) {
		hi = int32(len(n.prefix))
	}
	if hi >= 0 && lo > hi {
		c.noMatch(path, "minItems", "the array cannot hold minItems items")
		return nil, nil
	}
	n.minItems, n.maxItems = lo, hi
	n.countCap = max(int32(len(n.prefix)), lo, hi)
	return n, nil
}

// literal compiles enum/const, filtered by type when one is given.
func (c *compiler) literal(v map[string]any, path string) (*node, error) {
	var vals []any
	if raw, ok := v["enum"]; ok {
		list, ok := raw.([]any)
		if !ok {
			return nil, &SchemaError{Class: ErrInvalidSchema, Path: path, Keyword: "enum", Detail: "must be an array"}
		}
		vals = list
	}
	if cv, ok := v["const"]; ok {
		if _, hasEnum := v["enum"]; hasEnum {
			keep := false
			for _, e := range vals {
				keep = keep || jsonEqual(e, cv)
			}
			vals = nil
			if keep {
				vals = []any{cv}
			}
		} else {
			vals = []any{cv}
		}
	}
	types, err := c.types(v, nil, path)
	if err != nil {
		return nil, err
	}
	var enc []string
	var kept []any
	for _, e := range vals {
		if types != nil && !slices.ContainsFunc(types, func(t string) bool { return hasType(e, t) }) {
			continue
		}
		s := encodeValue(e)
		c.litBytes += len(s)
		if c.litBytes > maxLiteralBytes {
			return nil, &SchemaError{Class: ErrTooLarge, Path: path, Keyword: "enum", Detail: fmt.Sprintf("enum and const values above %d bytes", maxLiteralBytes)}
		}
		enc, kept = append(enc, s), append(kept, e)
	}
	if b, _ := v["nullable"].(bool); b && !slices.Contains(enc, "null") {
		enc, kept = append(enc, "null"), append(kept, nil)
	}
	if len(enc) == 0 {
		c.noMatch(path, "enum", "no enum or const value is allowed")
		return nil, nil
	}
	n, err := c.newNode(kindLiteral, path)
	if err != nil {
		return nil, err
	}
	n.lit, n.litVals = newTrie(enc, false), kept
	return n, nil
}

// hasType reports whether a decoded JSON value is of JSON Schema type t.
func hasType(v any, t string) bool {
	switch v := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case json.Number:
		if t == "number" {
			return true
		}
		f, err := strconv.ParseFloat(v.String(), 64)
		return t == "integer" && err == nil && f == float64(int64(f))
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

func jsonEqual(a, b any) bool { return encodeValue(a) == encodeValue(b) }

// encodeValue writes a decoded value compactly with sorted keys, the form
// the grammar makes the model produce.
func encodeValue(v any) string {
	var b strings.Builder
	var enc func(v any)
	enc = func(v any) {
		switch v := v.(type) {
		case nil:
			b.WriteString("null")
		case bool:
			b.WriteString(strconv.FormatBool(v))
		case json.Number:
			b.WriteString(v.String())
		case string:
			b.WriteByte('"')
			b.WriteString(encodeString(v))
			b.WriteByte('"')
		case []any:
			b.WriteByte('[')
			for i, e := range v {
				if i > 0 {
					b.WriteByte(',')
				}
				enc(e)
			}
			b.WriteByte(']')
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				enc(k)
				b.WriteByte(':')
				enc(v[k])
			}
			b.WriteByte('}')
		}
	}
	enc(v)
	return b.String()
}

// encodeString is the inside of a JSON string literal for s: quote,
// backslash and control characters escaped, everything else raw UTF-8.
func encodeString(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
