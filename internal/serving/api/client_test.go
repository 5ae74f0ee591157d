package api

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// clientDir is the Node project that runs the official openai client; the
// lead reuses its client.mjs against a live node.
const clientDir = "testdata/openai-client"

// runNodeScript runs node script in dir with args and returns its standard
// output, failing the test with both outputs when the script fails.
func runNodeScript(ctx context.Context, t *testing.T, node, dir, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", script, err, out, stderr.Bytes())
	}
	return out
}

// lockedOpenAIVersion is the openai version package-lock.json pins.
func lockedOpenAIVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(clientDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	v := lock.Packages["node_modules/openai"].Version
	if v == "" {
		t.Fatal("package-lock.json pins no openai version")
	}
	return v
}

// installedClient returns a directory where client.mjs runs with the locked
// openai version: the testdata folder when `npm ci` was run there, else a
// temporary copy installed with `npm ci`.
func installedClient(t *testing.T, ctx context.Context, npm string) string {
	t.Helper()
	want := lockedOpenAIVersion(t)
	if b, err := os.ReadFile(filepath.Join(clientDir, "node_modules", "openai", "package.json")); err == nil {
		var pkg struct{ Version string }
		if json.Unmarshal(b, &pkg) == nil && pkg.Version == want {
			return clientDir
		}
	}
	dir := t.TempDir()
	for _, name := range []string{"package.json", "package-lock.json", "client.mjs"} {
		b, err := os.ReadFile(filepath.Join(clientDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm ci could not install openai@%s (no registry?): %v\n%s", want, err, out)
	}
	return dir
}

// TestOpenAINodeClient runs the official openai npm client against the API
// with the test backend: streamed and non-streamed chat, a completion, the
// model list, a 404 for an unknown model, all with a bearer key.
func TestOpenAINodeClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the openai npm client check")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; skipping the openai npm client check")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed; skipping the openai npm client check")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := installedClient(t, ctx, npm)

	const key = "sk-node-client"
	f := newFixture(t, Config{APIKey: key})
	out := runNodeScript(ctx, t, node, dir, "client.mjs", f.url+"/v1", "echo", key)
	var got struct {
		Models []string
		Chat   struct {
			Object, Content string
			FinishReason    string `json:"finish_reason"`
			Usage           struct {
				Total int `json:"total_tokens"`
			}
		}
		Stream struct {
			Chunks       int
			Role         string
			Content      string
			FinishReason string `json:"finish_reason"`
			Usage        struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			}
		}
		Completion struct {
			Object, Text string
		}
		NotFound struct {
			Status int
			Type   string
		} `json:"not_found"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %s: %v", out, err)
	}
	const text = "hello brave new world"
	checks := []struct {
		name string
		ok   bool
	}{
		{"models", len(got.Models) == 2 && got.Models[0] == "echo"},
		{"chat", got.Chat.Object == "chat.completion" && got.Chat.Content == text && got.Chat.FinishReason == "stop" && got.Chat.Usage.Total == 8},
		{"stream", got.Stream.Role == "assistant" && got.Stream.Content == text && got.Stream.FinishReason == "stop" &&
			got.Stream.Usage.Prompt == 4 && got.Stream.Usage.Completion == 4 && got.Stream.Chunks == 7},
		{"completion", got.Completion.Object == "text_completion" && got.Completion.Text == text},
		{"not_found", got.NotFound.Status == 404 && got.NotFound.Type == "not_found_error"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: unexpected client view: %s", c.name, out)
		}
	}
}
