package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func repoFile(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

// runCLI runs the skulk command in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, stdio{strings.NewReader(""), &out, &errb})
	return code, out.String(), errb.String()
}

// runArgs runs the command line in-process; a failure is an *exitError
// with the exit status.
func runArgs(args []string, s stdio) error {
	if code := run(context.Background(), args, s); code != 0 {
		return &exitError{code: code, err: fmt.Errorf("skulk %s: exit %d", strings.Join(args, " "), code)}
	}
	return nil
}

func TestGenerateStories(t *testing.T) {
	stories := repoFile("testdata", "models", "stories260K.gguf")
	code, out, errs := runCLI(t, "generate", "--model", stories, "--prompt", "Once upon a time", "--max-tokens", "64", "--temperature", "0", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		PromptTokens []int32 `json:"prompt_tokens"`
		Tokens       []int32 `json:"tokens"`
		Text         string  `json:"text"`
		Prefill      float64 `json:"prefill_tokens_per_s"`
		Decode       float64 `json:"decode_tokens_per_s"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// llama.cpp's greedy continuation (reference/stories260K.json, case g01).
	want := ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily's mom said"
	if res.Text != want || len(res.Tokens) != 64 || len(res.PromptTokens) != 5 {
		t.Fatalf("got %d tokens %q", len(res.Tokens), res.Text)
	}
	if res.Prefill <= 0 || res.Decode <= 0 {
		t.Errorf("speeds %v %v", res.Prefill, res.Decode)
	}
	code, out, _ = runCLI(t, "generate", "--model", stories, "--prompt", "Once upon a time", "--max-tokens", "64", "--temperature", "0")
	if code != 0 || out != want+"\n" {
		t.Fatalf("streamed text %q", out)
	}
}

func TestTokenizeJSON(t *testing.T) {
	code, out, errs := runCLI(t, "tokenize", "--model", repoFile("testdata", "models", "stories260K.gguf"), "--text", "Hello world", "--json")
	if code != 0 {
		t.Fatal(errs)
	}
	// reference/stories260K.json t04 ids_default.
	if strings.TrimSpace(out) != `{"tokens":[1,346,306,414,263,304,341]}` {
		t.Fatalf("got %s", out)
	}
	code, out, _ = runCLI(t, "tokenize", "--model", repoFile("testdata", "models", "stories260K.gguf"), "--text", "Hello world", "--no-bos", "--json")
	if code != 0 || strings.TrimSpace(out) != `{"tokens":[346,306,414,263,304,341]}` {
		t.Fatalf("--no-bos: %s", out)
	}
}

func TestDevLogits(t *testing.T) {
	code, out, errs := runCLI(t, "dev", "logits", "--model", repoFile("testdata", "models", "stories260K.gguf"), "--tokens", "1,403,407")
	if code != 0 {
		t.Fatal(errs)
	}
	var res struct{ Logits [][]float32 }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Logits) != 3 || len(res.Logits[0]) != 512 {
		t.Fatalf("shape %d×%d", len(res.Logits), len(res.Logits[0]))
	}
}

func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "x.gguf")
	os.WriteFile(notGGUF, []byte("plain text"), 0o644)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"generate", "--model", filepath.Join(dir, "missing.gguf")}, 1, "no such file"},
		{[]string{"generate", "--model", notGGUF}, 1, "not a GGUF file"},
		{[]string{"generate", "--model", repoFile("testdata", "vocab", "ggml-vocab-bert-bge.gguf")}, 1, "unsupported model architecture"},
		{[]string{"generate"}, 2, "--model is required"},
		{[]string{"generate", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"dev", "logits", "--model", repoFile("testdata", "models", "stories260K.gguf"), "--tokens", "1,x"}, 2, "not a token id"},
		{[]string{"dev", "logits", "--model", repoFile("testdata", "models", "stories260K.gguf"), "--tokens", "1,99999"}, 1, "outside the vocabulary"},
		{[]string{"nope"}, 2, "unknown command"},
	}
	for _, c := range cases {
		code, _, errs := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.msg)
		}
		if n := strings.Count(strings.TrimSpace(errs), "\n"); c.code == 1 && n != 0 {
			t.Errorf("%v: want one line on stderr, got %q", c.args, errs)
		}
	}
}

// TestTokenizeVocabOnly tokenizes with a vocabulary-only GGUF (no tensors):
// llama.cpp's ids for "<|endoftext|>" as plain text and, with --special, as
// the special token (reference/vocab/ggml-vocab-gpt-2.json).
func TestTokenizeVocabOnly(t *testing.T) {
	vocab := repoFile("testdata", "vocab", "ggml-vocab-gpt-2.gguf")
	code, out, errs := runCLI(t, "tokenize", "--model", vocab, "--text", "<|endoftext|>", "--no-bos", "--json")
	if code != 0 || strings.TrimSpace(out) != `{"tokens":[27,91,437,1659,5239,91,29]}` {
		t.Fatalf("plain: exit %d %s %s", code, out, errs)
	}
	code, out, errs = runCLI(t, "tokenize", "--model", vocab, "--text", "<|endoftext|>", "--no-bos", "--special", "--json")
	if code != 0 || strings.TrimSpace(out) != `{"tokens":[50256]}` {
		t.Fatalf("--special: exit %d %s %s", code, out, errs)
	}
}
