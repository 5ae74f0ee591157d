package grammar

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// testSchemas are compiled by every walk test; they include the
// adversarial shapes (shared enum prefixes, nested arrays, ambiguous
// unions, escaped names).
var testSchemas = []struct {
	name   string
	schema string
}{
	{"scalars", `{"type":"object","properties":{"s":{"type":"string"},"n":{"type":"number"},"i":{"type":"integer"},"b":{"type":"boolean"},"z":{"type":"null"}},"required":["s","n","i","b","z"],"additionalProperties":false}`},
	{"nested", `{"type":"object","properties":{"user":{"type":"object","properties":{"name":{"type":"string","maxLength":12},"tags":{"type":"array","items":{"type":"string","maxLength":5},"maxItems":3}},"required":["name"],"additionalProperties":false},"ok":{"type":"boolean"}},"required":["user"],"additionalProperties":false}`},
	{"enum-prefixes", `{"type":"array","items":{"enum":["a","ab","abc","abd",1,10,100,-1,-10,null,"null",false,0,0.5]},"maxItems":6}`},
	{"nested-arrays", `{"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2}},"maxItems":3}`},
	{"ambiguous-union", `{"anyOf":[{"type":"object","properties":{"a":{"type":"string","maxLength":4}},"required":["a"],"additionalProperties":false},{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"}},"required":["a","b"],"additionalProperties":false},{"type":"array","items":{"type":"number"},"maxItems":2}]}`},
	{"extra-keys", `{"type":"object","properties":{"id":{"type":"integer"},"idx":{"const":"x"}},"required":["id"],"additionalProperties":{"type":"string","maxLength":3}}`},
	{"refs", `{"$defs":{"P":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"],"additionalProperties":false}},"type":"object","properties":{"from":{"$ref":"#/$defs/P"},"to":{"$ref":"#/$defs/P"},"via":{"type":"array","items":{"$ref":"#/$defs/P"},"maxItems":2}},"required":["from","to"],"additionalProperties":false}`},
	{"tuple", `{"type":"array","prefixItems":[{"type":"string","maxLength":3},{"type":"integer"},{"enum":["x","y"]}],"items":false,"minItems":2}`},
	{"string-bounds", `{"type":"array","items":[{"type":"string","minLength":2,"maxLength":3},{"type":"string","maxLength":0},{"type":"string","minLength":1,"maxLength":1}],"additionalItems":false,"minItems":3}`},
	{"nullable", `{"type":"object","properties":{"a":{"type":["string","null"],"maxLength":2},"b":{"type":"integer","nullable":true},"c":{"anyOf":[{"type":"number"},{"type":"null"}]}},"required":["a","b","c"],"additionalProperties":false}`},
	{"escaped-names", `{"type":"object","properties":{"a\"b":{"type":"integer"},"é":{"type":"integer"},"line\n":{"type":"integer"},"":{"type":"integer"},"a":{"const":{"k":[1,"v"]}}},"required":["a\"b","","a"],"additionalProperties":false}`},
	{"openai-strict", `{"type":"object","properties":{"steps":{"type":"array","items":{"type":"object","properties":{"explanation":{"type":"string","maxLength":20},"output":{"type":"string","maxLength":10}},"required":["explanation","output"],"additionalProperties":false},"maxItems":2},"final_answer":{"type":"string","maxLength":10},"kind":{"anyOf":[{"type":"string","enum":["math","text"]},{"type":"null"}]}},"required":["steps","final_answer","kind"],"additionalProperties":false,"title":"MathReasoning"}`},
	{"one-of-disjoint", `{"oneOf":[{"type":"string","maxLength":3},{"type":"integer"},{"type":"object","properties":{"k":{"const":1}},"required":["k"],"additionalProperties":false}]}`},
	{"discriminated-union", `{"type":"object","properties":{"pet":{"oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"},{"type":"null"}]}},"required":["pet"],"additionalProperties":false,"$defs":{"Cat":{"type":"object","properties":{"kind":{"const":"cat"},"lives":{"type":"integer"}},"required":["kind","lives"],"additionalProperties":false},"Dog":{"type":"object","properties":{"kind":{"const":"dog"},"good":{"type":"boolean"}},"required":["kind"]}}}`},
	{"any-value", `{"type":"array","items":{},"maxItems":4}`},
	{"implied-object", `{"properties":{"q":{"type":"integer"}},"required":["q"]}`},
	{"root-number", `{"type":"number"}`},
	{"root-enum", `{"enum":[1,12,123]}`},
}

func mustCompile(t testing.TB, schema string) *Matcher {
	t.Helper()
	m, err := Compile([]byte(schema))
	if err != nil {
		t.Fatalf("compile %s: %v", schema, err)
	}
	return m
}

func TestCompileRefused(t *testing.T) {
	tests := []struct {
		name, schema string
		class        error
		path, kw     string
	}{
		{"not-json", `{`, ErrInvalidSchema, "", ""},
		{"trailing", `{} {}`, ErrInvalidSchema, "", ""},
		{"number-schema", `3`, ErrInvalidSchema, "", ""},
		{"bad-type", `{"type":"text"}`, ErrInvalidSchema, "", "type"},
		{"type-not-string", `{"type":3}`, ErrInvalidSchema, "", "type"},
		{"properties-not-object", `{"type":"object","properties":[]}`, ErrInvalidSchema, "", "properties"},
		{"required-not-strings", `{"type":"object","required":[1]}`, ErrInvalidSchema, "", "required"},
		{"negative-max", `{"type":"array","maxItems":-1}`, ErrInvalidSchema, "", "maxItems"},
		{"fractional-min", `{"type":"string","minLength":1.5}`, ErrInvalidSchema, "", "minLength"},
		{"dangling-ref", `{"$ref":"#/$defs/Nope"}`, ErrInvalidSchema, "", "$ref"},
		{"empty-anyof", `{"anyOf":[]}`, ErrInvalidSchema, "", "anyOf"},
		{"pattern", `{"type":"string","pattern":"^a+$"}`, ErrUnsupported, "", "pattern"},
		{"nested-minimum", `{"type":"object","properties":{"age":{"type":"integer","minimum":0}}}`, ErrUnsupported, "/properties/age", "minimum"},
		{"unique-items", `{"type":"array","uniqueItems":true}`, ErrUnsupported, "", "uniqueItems"},
		{"not", `{"not":{"type":"string"}}`, ErrUnsupported, "", "not"},
		{"if", `{"if":{"type":"string"}}`, ErrUnsupported, "", "if"},
		{"remote-ref", `{"$ref":"https://example.com/s.json"}`, ErrUnsupported, "", "$ref"},
		{"recursive-ref", `{"$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N"}}}},"$ref":"#/$defs/N"}`, ErrUnsupported, "/$defs/N/properties/next", "$ref"},
		{"ref-with-sibling", `{"$defs":{"A":{"type":"string"}},"$ref":"#/$defs/A","maxLength":3}`, ErrUnsupported, "", "$ref"},
		{"allof-two", `{"allOf":[{"type":"string"},{"maxLength":3}]}`, ErrUnsupported, "", "allOf"},
		{"anyof-with-type", `{"type":"object","anyOf":[{"required":["a"]}]}`, ErrUnsupported, "", "anyOf"},
		{"oneof-overlap", `{"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]}`, ErrUnsupported, "", "oneOf"},
		{"oneof-number-integer", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, ErrUnsupported, "", "oneOf"},
		{"oneof-equal-literals", `{"oneOf":[{"enum":[1,2]},{"const":1.0}]}`, ErrUnsupported, "", "oneOf"},
		{"oneof-objects-no-discriminator", `{"oneOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}]}`, ErrUnsupported, "", "oneOf"},
		{"enum-with-minlength", `{"enum":["a"],"minLength":2}`, ErrUnsupported, "", "enum"},
		{"false", `false`, ErrUnsatisfiable, "", ""},
		{"empty-enum", `{"enum":[]}`, ErrUnsatisfiable, "", "enum"},
		{"enum-wrong-type", `{"type":"string","enum":[1,2]}`, ErrUnsatisfiable, "", "enum"},
		{"length-crossed", `{"type":"string","minLength":3,"maxLength":2}`, ErrUnsatisfiable, "", "minLength"},
		{"items-crossed", `{"type":"array","minItems":2,"items":false}`, ErrUnsatisfiable, "", "minItems"},
		{"required-forbidden", `{"type":"object","required":["a"],"additionalProperties":false}`, ErrUnsatisfiable, "", "required"},
		{"required-false", `{"type":"object","properties":{"a":false},"required":["a"]}`, ErrUnsatisfiable, "/properties/a", "required"},
		{"all-alternatives-false", `{"anyOf":[false,{"enum":[]}]}`, ErrUnsatisfiable, "", ""},
		{"min-too-large", `{"type":"string","minLength":100000000}`, ErrTooLarge, "", "minLength"},
		{"too-deep", strings.Repeat(`{"items":`, 70) + `{}` + strings.Repeat(`}`, 70), ErrTooLarge, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Compile([]byte(tt.schema))
			if err == nil {
				t.Fatalf("compiled; want %v", tt.class)
			}
			if m != nil {
				t.Errorf("matcher returned with error")
			}
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a *SchemaError", err, err)
			}
			if !errors.Is(err, tt.class) {
				t.Errorf("class %v, want %v (%v)", se.Class, tt.class, err)
			}
			if tt.name != "too-deep" && (se.Path != tt.path || se.Keyword != tt.kw) {
				t.Errorf("at %q keyword %q, want %q %q (%v)", se.Path, se.Keyword, tt.path, tt.kw, err)
			}
		})
	}
}

func TestCompileNotes(t *testing.T) {
	m := mustCompile(t, `{"type":"object","properties":{"when":{"type":"string","format":"date-time"},"v":{"oneOf":[{"type":"string"},{"type":"integer"}],"x-extra":1,"frobnicate":2}}}`)
	notes := m.Notes()
	want := []string{
		`/properties/v: unknown keyword "frobnicate" ignored`,
		`/properties/when: format "date-time" is not enforced`,
	}
	if !slices.Equal(notes, want) {
		t.Errorf("notes:\n%q\nwant\n%q", notes, want)
	}
}

// TestPrefix checks the matcher on hand-written texts, valid and not.
func TestPrefix(t *testing.T) {
	obj := `{"type":"object","properties":{"a":{"type":"integer"},"ab":{"type":"string"}},"required":["a"],"additionalProperties":false}`
	extra := `{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"boolean"}}`
	tests := []struct {
		name, schema, text string
		ok, complete       bool
	}{
		{"obj", obj, `{"a":1}`, true, true},
		{"obj-space", obj, `{"a": 1, "ab": "x"}`, true, true},
		{"obj-any-order", obj, `{"ab":"x","a":-0}`, true, true},
		{"obj-open", obj, `{"a":1`, true, false},
		{"obj-missing-required", obj, `{"ab":"x"}`, false, false},
		{"obj-duplicate", obj, `{"a":1,"a"`, false, false},
		{"obj-unknown-key", obj, `{"b"`, false, false},
		{"obj-two-spaces", obj, `{"a":  1}`, false, false},
		{"obj-newline", obj, "{\"a\":\n1}", false, false},
		{"obj-space-before-colon", obj, `{"a" :1}`, false, false},
		{"obj-leading-space", obj, ` {"a":1}`, false, false},
		{"obj-trailing", obj, `{"a":1} `, false, false},
		{"obj-trailing-comma", obj, `{"a":1,}`, false, false},
		{"int-leading-zero", obj, `{"a":01}`, false, false},
		{"int-fraction", obj, `{"a":1.5}`, false, false},
		{"extra-ok", extra, `{"b":true,"a":2,"c":false}`, true, true},
		{"extra-wrong-type", extra, `{"b":1}`, false, false},
		{"extra-escaped-declared", extra, `{"\u0061":true}`, false, false},
		{"extra-escape", extra, `{"x\n"`, false, false},
		{"extra-prefix-of-declared", extra, `{"":true}`, true, true},
		{"string-escapes", `{"type":"string"}`, `"a\"\\\/\b\f\n\r\t\u00e9\uFFFF"`, true, true},
		{"string-raw-utf8", `{"type":"string"}`, `"é€😀"`, true, true},
		{"string-lone-surrogate", `{"type":"string"}`, `"\ud800`, false, false},
		{"string-bad-escape", `{"type":"string"}`, `"\x`, false, false},
		{"string-control", `{"type":"string"}`, "\"a\tb\"", false, false},
		{"string-overlong", `{"type":"string"}`, "\"\xc0\xaf\"", false, false},
		{"string-utf8-surrogate", `{"type":"string"}`, "\"\xed\xa0\x80\"", false, false},
		{"string-above-max-rune", `{"type":"string"}`, "\"\xf4\x90\x80\x80\"", false, false},
		{"string-maxlen", `{"type":"string","maxLength":2}`, `"é\n"`, true, true},
		{"string-maxlen-over", `{"type":"string","maxLength":2}`, `"abc`, false, false},
		{"string-minlen", `{"type":"string","minLength":2}`, `"a"`, false, false},
		{"number-forms", `{"type":"array","items":{"type":"number"}}`, `[0,-0,1.5,-2e10,3E+2,4.25e-1]`, true, true},
		{"number-bad-exp", `{"type":"number"}`, `1e`, true, false},
		{"number-dot-exp", `{"type":"number"}`, `1.e5`, false, false},
		{"root-number-grows", `{"type":"number"}`, `12`, true, true},
		{"enum-prefix", `{"enum":["a","ab"]}`, `"a"`, true, true},
		{"enum-other", `{"enum":["a","ab"]}`, `"b"`, false, false},
		{"enum-number-prefix", `{"enum":[1,12]}`, `1`, true, true},
		{"enum-number-ext", `{"enum":[1,12]}`, `13`, false, false},
		{"const-object-sorted", `{"const":{"b":1,"a":[true]}}`, `{"a":[true],"b":1}`, true, true},
		{"array-bounds", `{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2}`, `[]`, false, false},
		{"array-max", `{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2}`, `[1, 2,`, false, false},
		{"array-ok", `{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2}`, `[1, 2]`, true, true},
		{"any-object", `{}`, `{"a":[{"b":null}],"c":"\u0041"}`, true, true},
		{"tuple-closed", `{"prefixItems":[{"type":"integer"}],"items":false}`, `[1,`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustCompile(t, tt.schema)
			ok, complete := m.Prefix([]byte(tt.text))
			if ok != tt.ok || complete != tt.complete {
				t.Errorf("Prefix(%q) = %v, %v; want %v, %v", tt.text, ok, complete, tt.ok, tt.complete)
			}
			if complete {
				if err := validateText(tt.schema, []byte(tt.text)); err != nil {
					t.Errorf("complete text does not validate: %v", err)
				}
			}
		})
	}
}

func TestJSONObject(t *testing.T) {
	m := JSONObject()
	for _, s := range []string{`{}`, `{"a": [1, {"b": "c"}], "d": null}`} {
		if ok, c := m.Prefix([]byte(s)); !ok || !c {
			t.Errorf("%s refused", s)
		}
	}
	for _, s := range []string{`[]`, `"x"`, `1`, `{"a":}`} {
		if ok, c := m.Prefix([]byte(s)); ok && c {
			t.Errorf("%s accepted", s)
		}
	}
}

// allowedBytes lists the bytes st may read next.
func allowedBytes(st []*stack) []byte {
	var out []byte
	for b := 0; b < 256; b++ {
		var a *arena
		if len(a.stepSet(st, byte(b), nil)) > 0 {
			out = append(out, byte(b))
		}
	}
	return out
}

// byteWalk generates one random document byte by byte, failing on a dead
// end. Past soft bytes it prefers bytes that close things.
func byteWalk(t testing.TB, m *Matcher, rng *rand.Rand, soft, hard int) []byte {
	t.Helper()
	text, complete, dead := tryWalk(m, rng, soft, hard)
	if dead {
		t.Fatalf("dead end after %q", text)
	}
	if !complete {
		t.Fatalf("no document within %d bytes: %q", hard, text)
	}
	return text
}

// tryWalk is byteWalk reporting instead of failing: the text, whether it
// is a complete document, whether it hit a state with no allowed byte.
func tryWalk(m *Matcher, rng *rand.Rand, soft, hard int) (text []byte, complete, dead bool) {
	st := m.start()
	for len(text) < hard {
		done := anyComplete(st)
		if done && (len(text) > soft || rng.IntN(4) == 0) {
			return text, true, false
		}
		bs := allowedBytes(st)
		if len(bs) == 0 {
			return text, done, !done
		}
		b := bs[rng.IntN(len(bs))]
		if len(text) > soft && rng.IntN(5) != 0 {
			if cl := closers(st, bs); len(cl) > 0 {
				b = cl[rng.IntN(len(cl))]
			}
		}
		var a *arena
		st = a.stepSet(st, b, nil)
		text = append(text, b)
	}
	return text, false, false
}

// closers returns the allowed bytes that move towards the end of the
// document, judged from the first stack's top frame: close a string; in a
// key, follow the declared names; otherwise close brackets, then open
// keys or strings, then digits.
func closers(st []*stack, bs []byte) []byte {
	pick := func(class string) []byte {
		var out []byte
		for _, b := range bs {
			if strings.IndexByte(class, b) >= 0 {
				out = append(out, b)
			}
		}
		return out
	}
	f := &st[0].f
	switch {
	case f.n.kind == kindString || f.n.kind == kindObject && f.phase == objKey && f.sub < 0:
		return pick(`"`)
	case f.n.kind == kindObject && f.phase == objKey && f.sub >= 0:
		if tm := f.n.keys.nodes[f.sub].term; tm >= 0 && f.n.avail.has(tm) && !f.seen.has(tm) {
			return pick(`"`)
		}
		var out []byte
		nd := f.n.keys.nodes[f.sub]
		for _, e := range f.n.keys.edges[nd.first : nd.first+nd.n] {
			if slices.Contains(bs, e.b) {
				out = append(out, e.b)
			}
		}
		if len(out) > 0 {
			return out
		}
		return pick(`"`)
	}
	for _, class := range []string{"]}", `"`, "0123456789"} {
		if out := pick(class); len(out) > 0 {
			return out
		}
	}
	return nil
}

func TestByteWalks(t *testing.T) {
	for _, ts := range testSchemas {
		t.Run(ts.name, func(t *testing.T) {
			m := mustCompile(t, ts.schema)
			rng := rand.New(rand.NewPCG(1, uint64(len(ts.name))))
			for range 200 {
				text := byteWalk(t, m, rng, 60, 20000)
				if err := validateText(ts.schema, text); err != nil {
					t.Fatalf("%q: %v", text, err)
				}
			}
		})
	}
}
