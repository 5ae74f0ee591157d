package chat

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// referenceCase is an entry of testdata/expected.json: what transformers
// rendered, or the error it raised.
type referenceCase struct {
	ID        string  `json:"id"`
	Rendered  *string `json:"rendered"`
	Error     string  `json:"error"`
	ErrorKind string  `json:"error_kind"`
}

// TestReferenceCases renders every case of testdata/expected.json and
// compares it byte for byte with transformers' output.
func TestReferenceCases(t *testing.T) { checkReferenceCases(t, "testdata", 204) }

// TestMoEReferenceCases does the same for the templates of the
// mixture-of-experts families (gpt-oss, DeepSeek V3.1, Kimi K2, GLM-4.6),
// rendered by Jinja2 with testdata/moe/render.py.
func TestMoEReferenceCases(t *testing.T) { checkReferenceCases(t, "testdata/moe", 86) }

func checkReferenceCases(t *testing.T, dir string, want int) {
	data, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != want {
		t.Fatalf("%s/expected.json holds %d cases, want %d", dir, len(raw), want)
	}
	passed := 0
	for _, r := range raw {
		var c referenceCase
		if err := json.Unmarshal(r, &c); err != nil {
			t.Fatal(err)
		}
		ok := t.Run(c.ID, func(t *testing.T) {
			got, err := RenderCase(dir, r)
			switch {
			case c.Rendered != nil:
				if err != nil {
					t.Fatalf("render failed: %v", err)
				}
				if got != *c.Rendered {
					t.Fatalf("render differs\n got: %q\nwant: %q", got, *c.Rendered)
				}
			case c.ErrorKind == "raise_exception":
				var te *TemplateError
				if !errors.As(err, &te) {
					t.Fatalf("want *TemplateError %q, got %v (output %q)", c.Error, err, got)
				}
				if te.Message != c.Error {
					t.Fatalf("message %q, want %q", te.Message, c.Error)
				}
			default:
				var re *RenderError
				if !errors.As(err, &re) {
					t.Fatalf("want *RenderError (%s), got %v (output %q)", c.Error, err, got)
				}
			}
		})
		if ok {
			passed++
		}
	}
	t.Logf("%d of %d reference cases pass", passed, len(raw))
}
