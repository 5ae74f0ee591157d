package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/client"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

func TestLoadReady(t *testing.T) {
	tests := []struct {
		name string
		ctx  int
		want int
	}{
		{name: "model_length", ctx: 0, want: 2048},
		{name: "stamped", ctx: 256, want: 256},
		{name: "capped_at_model_length", ctx: 100000, want: 2048},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startClient(t, client.Options{}, "runner")
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			st, err := c.Load(ctx, proto.LoadSpec{ModelPath: modelPath(t), Threads: 1, ContextTokens: tt.ctx, Instance: "i1"})
			if err != nil {
				t.Fatal(err)
			}
			if st.State != proto.StateReady || st.ContextTokens != tt.want || st.WeightBytes <= 0 {
				t.Fatalf("status %+v, want ready with %d context tokens and the weights' size", st, tt.want)
			}
			if _, err := c.Load(ctx, proto.LoadSpec{ModelPath: modelPath(t)}); err == nil {
				t.Fatal("a second Load succeeded")
			}
		})
	}
}

// TestGreedyMatchesLlamaCpp: a runner gives llama.cpp's greedy text, on
// the best kernels for the CPU, on the portable ones a node asks for with
// SKULK_KERNELS=generic (the child's -kernels flag), and with the weights
// as stored (SKULK_PACK=off, -no-pack).
func TestGreedyMatchesLlamaCpp(t *testing.T) {
	prompt, want, promptTokens, n := reference(t)
	for _, args := range [][]string{nil, {"-kernels", "generic"}, {"-no-pack"}} {
		t.Run(strings.Join(append([]string{"args"}, args...), "_"), func(t *testing.T) {
			c := loadedClient(t, proto.LoadSpec{}, args...)
			r := generateAll(t, c, "t1", greedy(prompt, n))
			if r.content != want {
				t.Fatalf("greedy text\n got %q\nwant %q", r.content, want)
			}
			if r.last.Kind != request.ChunkDone || r.last.FinishReason != request.FinishLength || r.last.StopSequence != "" {
				t.Fatalf("last chunk %+v, want done/length and no stop sequence", r.last)
			}
			if u := r.last.Usage; u == nil || u.PromptTokens != promptTokens || u.CompletionTokens != n {
				t.Fatalf("usage %+v, want %d prompt and %d completion tokens", u, promptTokens, n)
			}
			if len(r.chunks) < 10 {
				t.Fatalf("%d chunks: the answer was not streamed", len(r.chunks))
			}
			// The prompt's size leads, in an empty delta sent before prefill.
			if first := r.chunks[0]; first.Kind != request.ChunkDelta || first.Content != "" || first.Usage == nil || first.Usage.PromptTokens != promptTokens {
				t.Fatalf("first chunk %+v, want an empty delta carrying %d prompt tokens", first, promptTokens)
			}
		})
	}
}

func TestConcurrentTasks(t *testing.T) {
	prompt, want, _, n := reference(t)
	c := loadedClient(t, proto.LoadSpec{})
	const tasks = 8
	chans := make([]<-chan request.Chunk, tasks)
	for i := range chans {
		ch, err := c.Generate(t.Context(), fmt.Sprintf("task-%d", i), greedy(prompt, n))
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = ch
	}
	if _, err := c.Generate(t.Context(), "task-0", greedy(prompt, 1)); !errors.Is(err, client.ErrDuplicateTask) {
		t.Fatalf("a duplicate task id gave %v, want ErrDuplicateTask", err)
	}
	// Read them in reverse, so early tasks wait on a slow reader.
	for i := tasks - 1; i >= 0; i-- {
		r := collect(t, chans[i])
		if r.content != want || r.last.FinishReason != request.FinishLength {
			t.Errorf("task %d: %q (finish %q), want the reference text", i, r.content, r.last.FinishReason)
		}
	}
}

func TestStopAndLogprobs(t *testing.T) {
	prompt, want, _, n := reference(t)
	c := loadedClient(t, proto.LoadSpec{})
	t.Run("stop_sequence", func(t *testing.T) {
		req := greedy(prompt, n)
		req.Sampling.Stop = []string{"zebra", "Lily"}
		r := generateAll(t, c, "stop", req)
		cut := want[:strings.Index(want, "Lily")]
		if r.content != cut || r.last.FinishReason != request.FinishStop || r.last.StopSequence != "Lily" {
			t.Fatalf("got %q finish %q stop sequence %q, want %q finish stop by \"Lily\"", r.content, r.last.FinishReason, r.last.StopSequence, cut)
		}
	})
	t.Run("logprobs", func(t *testing.T) {
		req := greedy(prompt, 16)
		req.Sampling.Logprobs, req.Sampling.TopLogprobs = true, 3
		r := generateAll(t, c, "lp", req)
		if len(r.logprobs) != 16 {
			t.Fatalf("%d logprobs, want one per token (16)", len(r.logprobs))
		}
		var text string
		for i, lp := range r.logprobs {
			text += lp.Token
			if len(lp.Top) != 3 || lp.Top[0].Token != lp.Token || lp.Top[0].Logprob != lp.Logprob {
				t.Fatalf("token %d: %+v: greedy picks the most likely token", i, lp)
			}
			if lp.Logprob > 0 || lp.Top[1].Logprob > lp.Top[0].Logprob {
				t.Fatalf("token %d: logprobs %+v out of order or positive", i, lp)
			}
		}
		if text != r.content {
			t.Fatalf("logprob tokens spell %q, content is %q", text, r.content)
		}
	})
}

func TestChatRequest(t *testing.T) {
	c := loadedClient(t, proto.LoadSpec{})
	zero := 0.0
	req := request.Request{Chat: true, Messages: []request.Message{
		{Role: request.RoleSystem, Content: "You tell stories."},
		{Role: request.RoleUser, Content: "Tell me about Lily."},
	}, Sampling: request.Sampling{MaxTokens: 24, Temperature: &zero}}
	r := generateAll(t, c, "chat", req)
	if r.last.Kind != request.ChunkDone || r.last.Usage == nil {
		t.Fatalf("last chunk %+v", r.last)
	}
	// stories260K has no template: the ChatML fallback renders
	// <|im_start|>system\n...<|im_end|>\n..., which this vocabulary spells
	// out in pieces, so the prompt is much longer than the message text.
	if u := r.last.Usage; u.PromptTokens < 30 || u.CompletionTokens == 0 {
		t.Fatalf("usage %+v: the template was not rendered", u)
	}
	bad := req
	bad.TemplateKwargs = map[string]any{"messages": "x"}
	r = generateAll(t, c, "chat-bad", bad)
	if r.last.Kind != request.ChunkError || r.last.Error.Class != fault.ClassInvalid {
		t.Fatalf("a reserved template kwarg gave %+v, want an invalid_request error", r.last)
	}
}

func TestTaskErrors(t *testing.T) {
	c := loadedClient(t, proto.LoadSpec{ContextTokens: 16})
	tests := []struct {
		name  string
		req   request.Request
		param string
		msg   string // a part of the message; "" for any
	}{
		{name: "prompt_over_context", req: greedy(strings.Repeat("Once upon a time ", 5), 4), param: "prompt",
			msg: "the prompt has 22 tokens, but the context window is 16 tokens"},
		// A prompt that certainly overflows is refused by its length,
		// before it is tokenized.
		{name: "prompt_far_over_context", req: greedy(strings.Repeat("Once upon a time ", 1<<16), 4), param: "prompt",
			msg: "the prompt has at least"},
		{name: "bad_temperature", req: func() request.Request {
			r := greedy("hi", 4)
			v := 7.0
			r.Sampling.Temperature = &v
			return r
		}(), param: "temperature"},
		{name: "json_schema", req: func() request.Request {
			r := greedy("hi", 4)
			r.JSONSchema = []byte(`{"type":"bogus"}`)
			return r
		}(), param: "json_schema"},
		{name: "chat_without_messages", req: request.Request{Chat: true}, param: "messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := generateAll(t, c, tt.name, tt.req)
			if len(r.chunks) != 1 || r.last.Kind != request.ChunkError {
				t.Fatalf("chunks %+v, want one error chunk", r.chunks)
			}
			if e := r.last.Error; e.Class != fault.ClassInvalid || e.Param != tt.param || !strings.Contains(e.Message, tt.msg) {
				t.Fatalf("error %+v, want invalid_request on %q saying %q", e, tt.param, tt.msg)
			}
		})
	}
	// The runner is still serving.
	r := generateAll(t, c, "after", greedy("Once upon a time", 4))
	if r.last.Kind != request.ChunkDone || r.last.Usage.CompletionTokens != 4 {
		t.Fatalf("after the errors: %+v", r.last)
	}
	// A 16-token window leaves 11 tokens after the 5-token prompt.
	r = generateAll(t, c, "window", greedy("Once upon a time", 100))
	if r.last.FinishReason != request.FinishLength || r.last.Usage.CompletionTokens != 11 {
		t.Fatalf("window-bounded task: %+v", r.last)
	}
}

func TestCancel(t *testing.T) {
	c := loadedClient(t, proto.LoadSpec{}, "-slots", "1")
	t.Run("running", func(t *testing.T) {
		ch, err := c.Generate(t.Context(), "long", greedy("Once upon a time", 2000))
		if err != nil {
			t.Fatal(err)
		}
		// Cancel once text flows: after the prompt-count chunk, at the
		// first delta with text.
		if first := <-ch; !first.EmptyDelta() || first.Usage == nil {
			t.Fatalf("first chunk %+v, want the prompt count", first)
		}
		if text := <-ch; text.Kind != request.ChunkDelta || text.Content == "" {
			t.Fatalf("second chunk %+v, want text", text)
		}
		if err := c.Cancel(t.Context(), "long"); err != nil {
			t.Fatal(err)
		}
		r := collect(t, ch)
		if r.last.Kind != request.ChunkDone || r.last.FinishReason != request.FinishCancelled {
			t.Fatalf("last chunk %+v, want done/cancelled", r.last)
		}
		if n := r.last.Usage.CompletionTokens; n >= 2000 || n < 1 {
			t.Fatalf("cancelled after %d tokens", n)
		}
	})
	t.Run("queued", func(t *testing.T) {
		// With one slot, the second task waits behind the first.
		ch1, err := c.Generate(t.Context(), "first", greedy("Once upon a time", 2000))
		if err != nil {
			t.Fatal(err)
		}
		ch2, err := c.Generate(t.Context(), "second", greedy("Once upon a time", 8))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Cancel(t.Context(), "second"); err != nil {
			t.Fatal(err)
		}
		r2 := collect(t, ch2)
		if len(r2.chunks) != 1 || r2.last.FinishReason != request.FinishCancelled || r2.last.Usage.CompletionTokens != 0 {
			t.Fatalf("queued task: %+v, want a lone done/cancelled with no tokens", r2.chunks)
		}
		if err := c.Cancel(t.Context(), "first"); err != nil {
			t.Fatal(err)
		}
		if r1 := collect(t, ch1); r1.last.FinishReason != request.FinishCancelled {
			t.Fatalf("first task: %+v", r1.last)
		}
	})
}

// TestContextCancelAbandons ends a task by ending the caller's context: the
// channel closes, the runner is told to cancel, and its final chunk says so.
func TestContextCancelAbandons(t *testing.T) {
	rec := newLogRecorder()
	c := startClient(t, client.Options{Logger: slog.New(rec)}, "runner")
	if _, err := c.Load(t.Context(), proto.LoadSpec{ModelPath: modelPath(t), Threads: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := c.Generate(ctx, "walk-away", greedy("Once upon a time", 2000))
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	cancel()
	deadline := time.After(30 * time.Second)
	for range ch {
		select {
		case <-deadline:
			t.Fatal("the channel stayed open after its context ended")
		default:
		}
	}
	for {
		if r, ok := rec.find("abandoned task ended"); ok {
			if r["task"] != "walk-away" || r["finish"] != request.FinishCancelled {
				t.Fatalf("abandoned task ended with %v, want finish cancelled", r)
			}
			return
		}
		select {
		case <-deadline:
			t.Fatal("the runner never ended the abandoned task")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestChildKilledMidStream(t *testing.T) {
	c := loadedClient(t, proto.LoadSpec{})
	ch, err := c.Generate(t.Context(), "doomed", greedy("Once upon a time", 2000))
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := collect(t, ch)
	if r.last.Kind != request.ChunkError || r.last.Error.Class != fault.ClassInternal || !strings.Contains(r.last.Error.Message, "killed") {
		t.Fatalf("last chunk %+v, want an internal error naming the kill", r.last)
	}
	var st proto.Status
	select {
	case st = <-c.Statuses():
	case <-time.After(30 * time.Second):
		t.Fatal("no status after the runner died")
	}
	if st.State != proto.StateFailed || !strings.Contains(st.Reason, "signal: killed") {
		t.Fatalf("status %+v, want failed with the exit", st)
	}
	if _, ok := <-c.Statuses(); ok {
		t.Fatal("Statuses stayed open after the runner died")
	}
	if e := c.Exit(); e.Signal != "killed" {
		t.Fatalf("exit %s", e)
	}
	if _, err := c.Generate(t.Context(), "late", greedy("x", 1)); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Generate on a dead runner: %v, want ErrClosed", err)
	}
}

func TestLoadFailures(t *testing.T) {
	notGGUF := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(notGGUF, []byte("this is not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		spec   proto.LoadSpec
		reason string
	}{
		{name: "not_gguf", spec: proto.LoadSpec{ModelPath: notGGUF}, reason: "gguf"},
		{name: "missing_file", spec: proto.LoadSpec{ModelPath: filepath.Join(t.TempDir(), "absent.gguf")}, reason: "no such file"},
		{name: "no_path", spec: proto.LoadSpec{}, reason: "model_path is required"},
		{name: "shard", spec: proto.LoadSpec{ModelPath: modelPath(t), Start: 0, End: 2, First: true}, reason: "pipeline shards"},
		{name: "bad_template", spec: proto.LoadSpec{ModelPath: modelPath(t), ChatTemplateOverride: "{% if %}"}, reason: "chat_template_override"},
		{name: "unknown_cache_type", spec: proto.LoadSpec{ModelPath: modelPath(t), CacheType: "q5_1"}, reason: "kv cache type"},
		// stories260K's head_dim 8 is not a whole number of 32-element blocks.
		{name: "cache_type_head_dim", spec: proto.LoadSpec{ModelPath: modelPath(t), CacheType: "q8_0"}, reason: "head_dim"},
		{name: "speculative_mode", spec: proto.LoadSpec{ModelPath: modelPath(t), Speculative: &proto.SpeculativeSpec{Mode: "eagle"}}, reason: "speculative decoding"},
		{name: "draft_vocabulary", spec: proto.LoadSpec{ModelPath: modelPath(t), Speculative: &proto.SpeculativeSpec{Mode: proto.SpeculativeDraft,
			DraftModelPath: filepath.Join(filepath.Dir(modelPath(t)), "llama-2-tiny-random.gguf")}}, reason: "vocabulary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startClient(t, client.Options{}, "runner")
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			st, err := c.Load(ctx, tt.spec)
			var le *client.LoadError
			if !errors.As(err, &le) || st.State != proto.StateFailed {
				t.Fatalf("Load = %+v, %v; want a failed status", st, err)
			}
			if !strings.Contains(strings.ToLower(st.Reason), tt.reason) {
				t.Fatalf("reason %q does not mention %q", st.Reason, tt.reason)
			}
			// No crash: the runner answers and then shuts down cleanly.
			r := generateAll(t, c, "x", greedy("hi", 1))
			if r.last.Kind != request.ChunkError || r.last.Error.Class != fault.ClassUnavailable {
				t.Fatalf("generate on a failed runner: %+v", r.last)
			}
			if err := c.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if e := c.Exit(); !e.Success() {
				t.Fatalf("the runner exited with %s after a failed load", e)
			}
		})
	}
}

func TestFirstStatusDeadline(t *testing.T) {
	c := startClient(t, client.Options{FirstStatusDeadline: 300 * time.Millisecond}, "silent")
	start := time.Now()
	_, err := c.Load(t.Context(), proto.LoadSpec{ModelPath: modelPath(t)})
	if !errors.Is(err, client.ErrNoFirstStatus) {
		t.Fatalf("Load on a silent child: %v, want ErrNoFirstStatus", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("gave up after %v", d)
	}
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the silent child was not killed")
	}
	if e := c.Exit(); e.Signal == "" {
		t.Fatalf("exit %s, want a signal", e)
	}
}

func TestCloseReportsStopped(t *testing.T) {
	c := loadedClient(t, proto.LoadSpec{})
	ch, err := c.Generate(t.Context(), "inflight", greedy("Once upon a time", 2000))
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	collected := make(chan result, 1)
	go func() { collected <- collect(t, ch) }()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-collected
	if r.last.Kind != request.ChunkDone || r.last.FinishReason != request.FinishCancelled {
		t.Fatalf("in-flight task at shutdown ended with %+v, want done/cancelled", r.last)
	}
	var states []proto.State
	for st := range c.Statuses() {
		states = append(states, st.State)
	}
	if len(states) == 0 || states[len(states)-1] != proto.StateStopped {
		t.Fatalf("statuses %v, want to end with stopped", states)
	}
	if e := c.Exit(); !e.Success() {
		t.Fatalf("exit %s", e)
	}
}

// TestCountOnly renders and counts a prompt without generating.
func TestCountOnly(t *testing.T) {
	prompt, _, promptTokens, _ := reference(t)
	c := loadedClient(t, proto.LoadSpec{})
	req := greedy(prompt, 64)
	req.CountOnly = true
	r := generateAll(t, c, "count", req)
	if r.content != "" || r.last.Kind != request.ChunkDone || r.last.Usage == nil ||
		r.last.Usage.PromptTokens != promptTokens || r.last.Usage.CompletionTokens != 0 {
		t.Fatalf("count only: content %q, last %+v", r.content, r.last)
	}
}
