package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProgressBar(t *testing.T) {
	tests := []struct {
		name        string
		done, total int64
		want        string
	}{
		{"start", 0, 2 << 20, "[----------]   0%  0 B / 2.0 MiB"},
		{"half", 1 << 20, 2 << 20, "[#####-----]  50%  1.0 MiB / 2.0 MiB"},
		{"done", 2 << 20, 2 << 20, "[##########] 100%  2.0 MiB / 2.0 MiB"},
		{"unknown_total", 5, 0, "[----------]   0%  5 B / 0 B"},
		{"past_the_end", 3 << 20, 2 << 20, "[##########] 100%  3.0 MiB / 2.0 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := progressBar(tt.done, tt.total, 10); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestProgressLine: a shorter line blanks the rest of the longer one it
// replaces, an unchanged line is not redrawn, and end finishes the line.
func TestProgressLine(t *testing.T) {
	var b bytes.Buffer
	p := &progressLine{w: &b}
	p.show(1<<20, 2<<20, "a-long-file-name.gguf")
	p.show(1<<20, 2<<20, "a-long-file-name.gguf")
	p.show(2<<20, 2<<20, "")
	p.end()
	p.end()
	lines := strings.Split(b.String(), "\r")
	if len(lines) != 3 || !strings.HasSuffix(lines[2], strings.Repeat(" ", len("  a-long-file-name.gguf"))+"\n") {
		t.Fatalf("output %q", b.String())
	}
}

func TestModelsUsage(t *testing.T) {
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"models"}, "skulk models [command]"},
		{[]string{"models", "nope"}, `unknown subcommand "nope"`},
		{[]string{"models", "add"}, "usage: skulk models add REF"},
		{[]string{"models", "pull"}, "usage: skulk models pull MODEL"},
		{[]string{"models", "rm", "a", "b"}, "usage: skulk models rm MODEL"},
		{[]string{"rm", "a", "b"}, "usage: skulk rm MODEL"},
		{[]string{"models", "import"}, "usage: skulk models import FILE"},
		{[]string{"models", "show", "--bogus", "x"}, "unknown flag: --bogus"},
		{[]string{"run", "stories260k", "--home", "/tmp/x"}, "--home is a node flag"},
		{[]string{"run", "--verbose"}, "--verbose is a chat flag"},
		{[]string{"place", "--replicas", "-1", "m"}, "--replicas must be at least 1"},
	}
	for _, tt := range tests {
		code, _, errs := runCLI(t, tt.args...)
		if code != 2 || !strings.Contains(errs, tt.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, errs, tt.msg)
		}
	}
}

// TestModelsNoNode: a client command says how to reach a node.
func TestModelsNoNode(t *testing.T) {
	code, _, errs := runCLI(t, "models", "show", "x", "--host", "127.0.0.1:1")
	if code != 1 || !strings.Contains(errs, "cannot reach a skulk node at http://127.0.0.1:1") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestEscapeID(t *testing.T) {
	if got := escapeID("org/model name:q4"); got != "org/model%20name:q4" {
		t.Fatalf("got %q", got)
	}
}

// TestRenderLibrary: the library table marks each family's default tag and
// says what the node has, under which id when another (golden file).
func TestRenderLibrary(t *testing.T) {
	entries := []libraryEntry{
		{Name: "qwen3:4b", Repo: "Qwen/Qwen3-4B-GGUF", File: "Qwen3-4B-Q4_K_M.gguf", Size: 2497280256, Description: "Qwen3 4B"},
		{Name: "qwen3:8b", Default: true, Repo: "Qwen/Qwen3-8B-GGUF", File: "Qwen3-8B-Q4_K_M.gguf", Size: 5027783488, Description: "Qwen3 8B",
			InCatalog: true, ModelID: "qwen3:8b", Installed: true},
		{Name: "smollm2:135m", Default: true, Repo: "bartowski/SmolLM2-135M-Instruct-GGUF", File: "SmolLM2-135M-Instruct-Q4_K_M.gguf", Size: 105454432,
			Description: "SmolLM2 135M", InCatalog: true, ModelID: "smollm2-135m-instruct-q4_k_m"},
	}
	var b bytes.Buffer
	if err := renderLibrary(&b, entries); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "library.golden")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestRenderLibrary -update writes it)", err)
	}
	if b.String() != string(want) {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestOnLoopback: a path import is tried first only when the node's
// address is on this machine.
func TestOnLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost:52415":          true,
		"127.0.0.1:52415":          true,
		"127.3.2.1:1":              true,
		"[::1]:52415":              true,
		"http://localhost:9/x":     true,
		"https://127.0.0.1":        true,
		"10.0.0.2:52415":           false,
		"node2:52415":              false,
		"http://[fe80::1]:52415":   false,
		"https://example.org:443/": false,
	} {
		if got := newAPIClient(host).onLoopback(); got != want {
			t.Errorf("%s: onLoopback %v, want %v", host, got, want)
		}
	}
}

// TestRetryableUpload: only the refusals that clear by resuming from where
// the node's bytes end are retried.
func TestRetryableUpload(t *testing.T) {
	for code, want := range map[string]bool{"upload_busy": true, "upload_offset": true, "digest_mismatch": false, "": false, "upload_too_large": false} {
		if got := retryableUpload(code); got != want {
			t.Errorf("%q: %v, want %v", code, got, want)
		}
	}
}
