package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// synthBert returns ../shared's bert model, skipping when it is absent.
func synthBert(t *testing.T) string {
	t.Helper()
	p := repoFile("..", "shared", "models", "synthetic", "synth-bert.gguf")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: %s is absent (the shared models are not checked out)", p)
	}
	return p
}

type embedRef struct {
	Texts []struct {
		Name      string        `json:"name"`
		Text      string        `json:"text"`
		IDs       []int32       `json:"ids"`
		Embedding []json.Number `json:"embedding"`
	} `json:"texts"`
}

func loadEmbedRef(t *testing.T) embedRef {
	t.Helper()
	b, err := os.ReadFile(repoFile("testdata", "synthetic", "synth-bert.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r embedRef
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&r); err != nil {
		t.Fatal(err)
	}
	if len(r.Texts) == 0 {
		t.Fatal("reference has no texts")
	}
	return r
}

// checkEmbedOutput compares dev embed's JSON with llama.cpp's ids (exactly)
// and normalised embedding (within the F16-GELU-table bound, 3e-5).
func checkEmbedOutput(t *testing.T, out string, ids []int32, want []json.Number) {
	t.Helper()
	var res struct {
		Tokens    []int32   `json:"tokens"`
		Embedding []float32 `json:"embedding"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !slices.Equal(res.Tokens, ids) {
		t.Fatalf("tokens %v, llama.cpp %v", res.Tokens, ids)
	}
	if len(res.Embedding) != len(want) {
		t.Fatalf("embedding has %d values, want %d", len(res.Embedding), len(want))
	}
	var worst float64
	for i, n := range want {
		w, err := strconv.ParseFloat(n.String(), 32)
		if err != nil {
			t.Fatal(err)
		}
		worst = max(worst, math.Abs(float64(res.Embedding[i])-w))
	}
	if worst > 3e-5 {
		t.Errorf("embedding max |Δ| %.3g > 3e-5", worst)
	}
}

func devEmbed(args ...string) (string, error) {
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"dev", "embed"}, args...), stdio{strings.NewReader(""), &out, &errb})
	if code != 0 {
		return out.String(), &exitError{code: code, err: errors.New(errb.String())}
	}
	return out.String(), nil
}

func TestDevEmbedReference(t *testing.T) {
	model := synthBert(t)
	for _, tc := range loadEmbedRef(t).Texts {
		out, err := devEmbed("--model", model, "--text", tc.Text, "--threads", "2")
		if err != nil {
			t.Fatalf("%s: %v", tc.Name, err)
		}
		checkEmbedOutput(t, out, tc.IDs, tc.Embedding)
	}
}

func TestDevEmbedErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int    // exit status
		want string // in the error text
	}{
		{"no_text", []string{"--model", "x.gguf"}, 2, "required"},
		{"no_model", []string{"--text", "hi"}, 2, "required"},
		{"bad_flag", []string{"--nope"}, 2, ""},
		{"negative_threads", []string{"--model", "x.gguf", "--text", "hi", "--threads", "-1"}, 2, "threads"},
		{"missing_file", []string{"--model", repoFile("testdata", "no-such.gguf"), "--text", "hi"}, 1, "no-such.gguf"},
		{"llama_model", []string{"--model", repoFile("testdata", "models", "stories260K.gguf"), "--text", "hi"}, 1, "unsupported architecture"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := devEmbed(tt.args...)
			if err == nil {
				t.Fatalf("no error; output %s", out)
			}
			code := 0
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			}
			if code != tt.code {
				t.Errorf("error %v: exit code %d, want %d", err, code, tt.code)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q lacks %q", err, tt.want)
			}
		})
	}
}

// TestDevEmbedCLI runs "skulk dev embed" through the command table.
func TestDevEmbedCLI(t *testing.T) {
	model := synthBert(t)
	tc := loadEmbedRef(t).Texts[0]
	code, out, errs := runCLI(t, "dev", "embed", "--model", model, "--text", tc.Text)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkEmbedOutput(t, out, tc.IDs, tc.Embedding)
	if code, _, errs := runCLI(t, "dev", "embed", "--model", model); code != 2 || !strings.Contains(errs, "required") {
		t.Errorf("without --text: exit %d, %q", code, errs)
	}
}
