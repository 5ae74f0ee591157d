package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/supervise"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/client"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// childEnv selects a child role when the test binary re-executes itself:
// "runner" runs Main, the real runner; "silent" never says anything.
const (
	childEnv     = "RUNNER_TEST_CHILD"
	childArgsEnv = "RUNNER_TEST_ARGS"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "runner":
		var args []string
		if a := os.Getenv(childArgsEnv); a != "" {
			args = strings.Fields(a)
		}
		if err := Main(context.Background(), os.Stdin, os.Stdout, os.Stderr, args); err != nil {
			fmt.Fprintln(os.Stderr, "runner:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "silent":
		for {
			time.Sleep(time.Hour)
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown child role")
		os.Exit(2)
	}
}

// modelPath is the stories260K test model.
func modelPath(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// reference is llama.cpp's greedy continuation of "Once upon a time" (64
// tokens) on stories260K, from testdata/reference/stories260K.json.
func reference(t testing.TB) (prompt, text string, promptTokens, tokens int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "reference", "stories260K.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Generation struct {
			Cases []struct {
				Prompt        string  `json:"prompt"`
				PromptIDs     []int32 `json:"prompt_ids"`
				GeneratedIDs  []int32 `json:"generated_ids"`
				GeneratedText string  `json:"generated_text"`
			} `json:"cases"`
		} `json:"generation"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	c := ref.Generation.Cases[0]
	if c.Prompt != "Once upon a time" {
		t.Fatalf("reference case 0 is %q", c.Prompt)
	}
	return c.Prompt, c.GeneratedText, len(c.PromptIDs), len(c.GeneratedIDs)
}

// testLogger logs to stderr under -v and discards otherwise.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// childSpec re-executes the test binary in role with runner args.
func childSpec(role string, args ...string) supervise.Spec {
	return supervise.Spec{
		Args:   []string{"-test.run=^$"},
		Env:    []string{childEnv + "=" + role, childArgsEnv + "=" + strings.Join(args, " ")},
		Logger: testLogger().With("child", role),
		Grace:  2 * time.Second,
	}
}

// startClient starts a runner child and closes it when the test ends.
func startClient(t *testing.T, opt client.Options, role string, args ...string) *client.Client {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger = testLogger()
	}
	c, err := client.Start(t.Context(), childSpec(role, args...), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c.Close(ctx)
	})
	return c
}

// loadedClient starts a runner and loads stories260K.
func loadedClient(t *testing.T, spec proto.LoadSpec, args ...string) *client.Client {
	t.Helper()
	c := startClient(t, client.Options{}, "runner", args...)
	if spec.ModelPath == "" {
		spec.ModelPath = modelPath(t)
	}
	if spec.Threads == 0 {
		spec.Threads = 1
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, err := c.Load(ctx, spec); err != nil {
		t.Fatal(err)
	}
	return c
}

// result is a task's chunks, gathered.
type result struct {
	content   string
	reasoning string
	calls     []request.ToolCall
	logprobs  []request.TokenLogprob
	chunks    []request.Chunk
	last      request.Chunk
}

// collect reads ch to its end, failing if it does not end with exactly one
// done or error chunk.
func collect(t testing.TB, ch <-chan request.Chunk) result {
	t.Helper()
	var r result
	timeout := time.After(60 * time.Second)
	for {
		select {
		case c, ok := <-ch:
			if !ok {
				if len(r.chunks) == 0 {
					t.Fatal("the stream closed without any chunk")
				}
				return r
			}
			if r.last.Kind == request.ChunkDone || r.last.Kind == request.ChunkError {
				t.Fatalf("chunk %+v after the terminal chunk %+v", c, r.last)
			}
			r.chunks = append(r.chunks, c)
			r.last = c
			r.content += c.Content
			r.reasoning += c.Reasoning
			r.logprobs = append(r.logprobs, c.Logprobs...)
			if c.ToolCall != nil {
				r.calls = append(r.calls, *c.ToolCall)
			}
		case <-timeout:
			t.Fatalf("the stream did not end within 60s (so far %q)", r.content)
		}
	}
}

func greedy(prompt string, maxTokens int) request.Request {
	zero := 0.0
	return request.Request{Prompt: prompt, Sampling: request.Sampling{MaxTokens: maxTokens, Temperature: &zero}}
}

// generate runs one task to its end.
func generateAll(t *testing.T, c *client.Client, task string, req request.Request) result {
	t.Helper()
	ch, err := c.Generate(t.Context(), task, req)
	if err != nil {
		t.Fatal(err)
	}
	return collect(t, ch)
}

// logRecorder is a slog.Handler that keeps every record's message and
// attributes.
type logRecorder struct {
	mu      *sync.Mutex
	records *[]map[string]string
	attrs   []slog.Attr
}

func newLogRecorder() *logRecorder {
	return &logRecorder{mu: new(sync.Mutex), records: new([]map[string]string)}
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message}
	for _, a := range h.attrs {
		m[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	*h.records = append(*h.records, m)
	h.mu.Unlock()
	return nil
}

func (h *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorder{mu: h.mu, records: h.records, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// find returns the first record with message msg.
func (h *logRecorder) find(msg string) (map[string]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range *h.records {
		if r["msg"] == msg {
			return r, true
		}
	}
	return nil, false
}
