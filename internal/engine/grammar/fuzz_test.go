package grammar

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
)

// FuzzCompile feeds arbitrary schema text to Compile: it never panics,
// refuses only with a *SchemaError, and what it compiles generates
// documents (random byte walks) that are valid JSON and validate against
// the schema, with no dead end on the way.
func FuzzCompile(f *testing.F) {
	for _, ts := range testSchemas {
		f.Add([]byte(ts.schema))
	}
	for _, s := range []string{`{}`, `true`, `{"type":["integer","string"],"minLength":1e1}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"enum":[[],{}]}},"items":{"$ref":"#/$defs/a"}}`,
		`{"properties":{"a~b/c":{"const":"\u0000"}},"required":["a~b/c"],"additionalProperties":false,"$ref":"#"}`,
		`{"prefixItems":[{"type":"null"},false],"minItems":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		m, err := Compile(schema)
		if err != nil {
			var se *SchemaError
			if !errors.As(err, &se) || m != nil {
				t.Fatalf("refusal %T %v with matcher %v", err, err, m != nil)
			}
			return
		}
		rng := rand.New(rand.NewPCG(uint64(len(schema)), 1))
		for range 3 {
			text, complete, dead := tryWalk(m, rng, 40, 4000)
			if dead {
				t.Fatalf("dead end after %q", text)
			}
			if !complete {
				continue // the walk's steering gave up; not a grammar fault
			}
			if err := validateText(string(schema), text); err != nil {
				t.Fatalf("generated %q: %v", text, err)
			}
		}
	})
}

// FuzzMatch feeds arbitrary text to the matchers of the test schemas:
// whatever they take as a complete document is valid JSON that validates,
// and every prefix of an accepted text is accepted too.
func FuzzMatch(f *testing.F) {
	seeds := []string{`{"s":"x","n":1.5e3,"i":-0,"b":true,"z":null}`, `[["a",1],[]]`, `{"a\"b":1,"":2,"a":{"k":[1,"v"]}}`,
		`"\ud83d"`, "\"\xed\xa0\x80\"", `{"id": 3, "x": "abc"}`, `[1, 12, "ab"]`, `{"from":{"x":1,"y":2},"to":{"y":0,"x":-1e-2}}`}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	matchers := make([]*Matcher, len(testSchemas))
	for i, ts := range testSchemas {
		matchers[i] = mustCompile(f, ts.schema)
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		for i, m := range matchers {
			ok, complete := m.Prefix(text)
			if complete && !ok {
				t.Fatalf("complete but not ok")
			}
			if !complete {
				continue
			}
			if !json.Valid(text) {
				t.Fatalf("%s accepts invalid JSON %q", testSchemas[i].name, text)
			}
			if err := validateText(testSchemas[i].schema, text); err != nil {
				t.Fatalf("%s accepts %q: %v", testSchemas[i].name, text, err)
			}
			for n := range text {
				if ok, _ := m.Prefix(text[:n]); !ok {
					t.Fatalf("%s accepts %q but not its prefix %q", testSchemas[i].name, text, text[:n])
				}
			}
		}
	})
}
