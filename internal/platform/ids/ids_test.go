package ids

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		valid bool
	}{
		{"node_simple", NodeID("node-1").Validate(), true},
		{"node_uuid", NodeID("0f8fad5b-d9cb-469f-a165-70867728950e").Validate(), true},
		{"node_colon_dot", NodeID("host.lan:52415").Validate(), true},
		{"node_empty", NodeID("").Validate(), false},
		{"node_slash", NodeID("a/b").Validate(), false},
		{"node_space", NodeID("a b").Validate(), false},
		{"node_newline", NodeID("a\nb").Validate(), false},
		{"node_leading_dash", NodeID("-rf").Validate(), false},
		{"node_leading_dot", NodeID(".hidden").Validate(), false},
		{"node_unicode", NodeID("nöde").Validate(), false},
		{"node_max_len", NodeID(strings.Repeat("a", MaxLen)).Validate(), true},
		{"node_too_long", NodeID(strings.Repeat("a", MaxLen+1)).Validate(), false},
		{"instance_empty", InstanceID("").Validate(), false},
		{"command_ok", CommandID("cmd_1").Validate(), true},
		{"runner_ok", RunnerID("r1").Validate(), true},
		{"task_at", TaskID("t@1").Validate(), false},
		{"model_hub", ModelID("meta-llama/Llama-3.2-1B-Instruct").Validate(), true},
		{"model_tag", ModelID("qwen2.5:0.5b").Validate(), true},
		{"model_plus_at", ModelID("org/m+lora@v2").Validate(), true},
		{"model_abs_path", ModelID("/etc/passwd").Validate(), false},
		{"model_dotdot", ModelID("a/../b").Validate(), false},
		{"model_dot_segment", ModelID("a/./b").Validate(), false},
		{"model_trailing_slash", ModelID("a/").Validate(), false},
		{"model_double_slash", ModelID("a//b").Validate(), false},
		{"model_backslash", ModelID(`a\b`).Validate(), false},
		{"model_nul", ModelID("a\x00b").Validate(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.valid && tt.err != nil {
				t.Fatalf("got %v, want valid", tt.err)
			}
			if !tt.valid {
				var ie *InvalidError
				if !errors.As(tt.err, &ie) || !errors.Is(tt.err, ErrInvalid) {
					t.Fatalf("got %v, want *InvalidError matching ErrInvalid", tt.err)
				}
			}
		})
	}
}

func TestInvalidErrorTruncatesValue(t *testing.T) {
	err := NodeID(strings.Repeat("x", 10000)).Validate()
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("error message not bounded: %d bytes", len(err.Error()))
	}
}

func TestParse(t *testing.T) {
	if id, err := ParseModelID("org/model"); err != nil || id != "org/model" {
		t.Fatalf("ParseModelID = %q, %v", id, err)
	}
	if _, err := ParseTaskID("bad id"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ParseTaskID(bad) = %v, want ErrInvalid", err)
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNew(t *testing.T) {
	src := rand.NewChaCha8([32]byte{1})
	seen := map[CommandID]bool{}
	for range 1000 {
		id, err := New[CommandID](src)
		if err != nil {
			t.Fatal(err)
		}
		if !uuidV4.MatchString(string(id)) {
			t.Fatalf("%q is not a v4 UUID", id)
		}
		if err := id.Validate(); err != nil {
			t.Fatalf("minted id fails validation: %v", err)
		}
		if err := id.Instance().Validate(); err != nil {
			t.Fatalf("instance id fails validation: %v", err)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestNewDeterministicFromReader(t *testing.T) {
	a, _ := New[TaskID](bytes.NewReader(bytes.Repeat([]byte{0xff}, 16)))
	if want := TaskID("ffffffff-ffff-4fff-bfff-ffffffffffff"); a != want {
		t.Fatalf("got %q, want %q", a, want)
	}
	b, _ := New[RunnerID](bytes.NewReader(make([]byte, 16)))
	if want := RunnerID("00000000-0000-4000-8000-000000000000"); b != want {
		t.Fatalf("got %q, want %q", b, want)
	}
}

func TestNewShortReader(t *testing.T) {
	_, err := New[NodeID](bytes.NewReader(make([]byte, 7)))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want io.ErrUnexpectedEOF", err)
	}
}

func FuzzValidateModelID(f *testing.F) {
	for _, s := range []string{"a", "org/m", "a/../b", "/x", "x/", "q:1@2+3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := ModelID(s).Validate()
		if err != nil {
			return
		}
		// A valid model id is a safe relative path: no traversal, no
		// absolute root, nothing outside the charset.
		if len(s) == 0 || len(s) > MaxLen || s[0] == '/' || strings.Contains(s, "//") {
			t.Fatalf("accepted %q", s)
		}
		for _, seg := range strings.Split(s, "/") {
			if seg == ".." || seg == "." || seg == "" {
				t.Fatalf("accepted traversal %q", s)
			}
		}
	})
}
