package shortname

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestBuiltin: the embedded library parses (every entry checked by Parse),
// holds the families the issue names, and each default is what a bare
// family name means.
func TestBuiltin(t *testing.T) {
	lib, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(lib.Entries()); n < 15 {
		t.Fatalf("%d entries; the library should hold the popular families", n)
	}
	for _, name := range []string{"qwen3:8b", "llama3.2:1b", "gemma3:4b", "phi3:mini", "gpt-oss:20b", "qwen2.5:0.5b", "smollm2:135m"} {
		if _, ok := lib.Lookup(name); !ok {
			t.Errorf("%s is not in the library", name)
		}
	}
	for _, e := range lib.Entries() {
		if e.Quant() == "" {
			t.Errorf("%s: no quantization in the file name %s", e.Name, e.File)
		}
		if strings.Contains(e.Tag(), "-") && !strings.HasSuffix(e.Tag(), "-"+strings.ToLower(e.Quant())) && e.Architecture != "qwen3moe" {
			t.Errorf("%s: a tag with a suffix names the quantization, and the file is %s", e.Name, e.Quant())
		}
	}
}

func testLibrary(t *testing.T) Library {
	t.Helper()
	lib, err := Parse([]byte(`
[[model]]
name = "qwen3:8b"
default = true
repo = "Qwen/Qwen3-8B-GGUF"
file = "Qwen3-8B-Q4_K_M.gguf"
size = 5027783488
architecture = "qwen3"
description = "Qwen3 8B"

[[model]]
name = "qwen3:4b"
repo = "Qwen/Qwen3-4B-GGUF"
file = "Qwen3-4B-Q4_K_M.gguf"
size = 2497280256
architecture = "qwen3"
description = "Qwen3 4B"

[[model]]
name = "gemma3:4b"
default = true
repo = "ggml-org/gemma-3-4b-it-GGUF"
file = "gemma-3-4b-it-Q4_K_M.gguf"
size = 2489757856
architecture = "gemma3"
description = "Gemma 3 4B"

[[model]]
name = "llama3.2:1b"
default = true
repo = "bartowski/Llama-3.2-1B-Instruct-GGUF"
file = "Llama-3.2-1B-Instruct-Q4_K_M.gguf"
size = 807694464
architecture = "llama"
description = "Llama 3.2 1B"

[[model]]
name = "llama3.2:1b-q8_0"
repo = "bartowski/Llama-3.2-1B-Instruct-GGUF"
file = "Llama-3.2-1B-Instruct-Q8_0.gguf"
size = 1321082528
architecture = "llama"
description = "Llama 3.2 1B Q8_0"
`))
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

func TestLookup(t *testing.T) {
	lib := testLibrary(t)
	tests := []struct {
		query, want string // want "" = not found
	}{
		{"qwen3:8b", "qwen3:8b"},
		{"qwen3:4b", "qwen3:4b"},
		{"qwen3", "qwen3:8b"},
		{"qwen3:latest", "qwen3:8b"},
		{"  Qwen3:8B ", "qwen3:8b"},
		{"qwen3:8b-q4_k_m", "qwen3:8b"},
		{"llama3.2:1b-q8_0", "llama3.2:1b-q8_0"},
		{"llama3.2:1b-q4_k_m", "llama3.2:1b"},
		{"llama3.2", "llama3.2:1b"},
		{"qwen3:8b-q8_0", ""},
		{"qwen3:32b", ""},
		{"qwen4", ""},
		{"", ""},
		{"hf:Qwen/Qwen3-8B-GGUF", ""},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			e, ok := lib.Lookup(tt.query)
			if ok != (tt.want != "") || e.Name != tt.want {
				t.Fatalf("Lookup(%q) = %q, %v; want %q", tt.query, e.Name, ok, tt.want)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	lib := testLibrary(t)
	tests := []struct {
		query string
		want  []string
	}{
		{"qwen4:8b", []string{"qwen3:8b", "qwen3:4b"}},
		{"qwen3:32b", []string{"qwen3:4b", "qwen3:8b"}},
		{"gema3", []string{"gemma3:4b"}},
		{"gemma", []string{"gemma3:4b"}},
		{"llama", []string{"llama3.2:1b", "llama3.2:1b-q8_0"}},
		{"lama3.2:1b", []string{"llama3.2:1b"}},
		{"mistral", nil},
		{"x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			if got := lib.Suggest(tt.query, 3); !slices.Equal(got, tt.want) {
				t.Fatalf("Suggest(%q) = %q, want %q", tt.query, got, tt.want)
			}
		})
	}
	if got := lib.Suggest("qwen3:32b", 1); len(got) != 1 {
		t.Fatalf("n = 1: %q", got)
	}
}

func TestIsName(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"qwen3", true},
		{"qwen3:8b", true},
		{"gpt-oss:20b", true},
		{"Qwen3:8B", true},
		{"stories260k", true},
		{"hf:Qwen/Qwen3-8B-GGUF", false},
		{"Qwen/Qwen3-8B-GGUF", false},
		{"hf:x", false},
		{"a:b:c", false},
		{"./m.gguf", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsName(tt.s); got != tt.want {
			t.Errorf("IsName(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	const ok = `name = "m:1b"
default = true
repo = "o/r"
file = "m-Q4_K_M.gguf"
size = 10
architecture = "llama"
description = "d"
`
	tests := []struct {
		name, doc, msg string
	}{
		{"bad_toml", "[[model]\n", "shortname:"},
		{"unknown_key", "[[model]]\n" + ok + "sha = \"x\"\n", "unknown key"},
		{"upper_case", "[[model]]\n" + strings.Replace(ok, `"m:1b"`, `"M:1b"`, 1), "FAMILY:TAG"},
		{"no_tag", "[[model]]\n" + strings.Replace(ok, `"m:1b"`, `"m"`, 1), "FAMILY:TAG"},
		{"twice", "[[model]]\n" + ok + "[[model]]\n" + strings.Replace(ok, "default = true\n", "", 1), "listed twice"},
		{"size", "[[model]]\n" + strings.Replace(ok, "size = 10", "size = 0", 1), "positive"},
		{"arch", "[[model]]\n" + strings.Replace(ok, `"llama"`, `"bert"`, 1), "not one the engine runs"},
		{"repo", "[[model]]\n" + strings.Replace(ok, `"o/r"`, `"o"`, 1), "Hub repository"},
		{"file", "[[model]]\n" + strings.Replace(ok, `"m-Q4_K_M.gguf"`, `"m.bin"`, 1), "Hub repository"},
		{"revision", "[[model]]\n" + strings.Replace(ok, `"m-Q4_K_M.gguf"`, `"m.gguf@main"`, 1), "Hub repository"},
		{"description", "[[model]]\n" + strings.Replace(ok, `"d"`, `" "`, 1), "description"},
		{"no_default", "[[model]]\n" + strings.Replace(ok, "default = true\n", "", 1), "0 default tags"},
		{"two_defaults", "[[model]]\n" + ok + "[[model]]\n" + strings.Replace(ok, `"m:1b"`, `"m:2b"`, 1), "2 default tags"},
		{"latest", "[[model]]\n" + ok + "[[model]]\n" + strings.Replace(strings.Replace(ok, `"m:1b"`, `"m:latest"`, 1), "default = true\n", "", 1), "latest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want %q", err, tt.msg)
			}
		})
	}
	if _, err := Parse([]byte("[[model]]\n" + ok)); err != nil {
		t.Fatalf("the valid entry: %v", err)
	}
	if lib, err := Parse(nil); err != nil || len(lib.Entries()) != 0 {
		t.Fatalf("empty file: %v", err)
	}
}

func TestUnknownError(t *testing.T) {
	tests := []struct {
		err  *UnknownError
		want string
	}{
		{&UnknownError{Name: "mistral"}, `unknown model "mistral"`},
		{&UnknownError{Name: "qwen4", Suggestions: []string{"qwen3:8b"}}, `unknown model "qwen4"; did you mean qwen3:8b?`},
		{&UnknownError{Name: "q", Suggestions: []string{"a:1", "b:2"}}, "did you mean one of a:1, b:2?"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); !strings.Contains(got, tt.want) {
			t.Errorf("%q does not contain %q", got, tt.want)
		}
		var u *UnknownError
		if !errors.As(error(tt.err), &u) {
			t.Error("errors.As")
		}
	}
}
