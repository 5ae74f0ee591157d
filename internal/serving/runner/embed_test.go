package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/supervise"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/client"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// synthBert is the random-weight bert model in the shared models, whose
// llama.cpp embeddings are in testdata/synthetic/synth-bert.json; the test
// is skipped when the shared models are absent.
func synthBert(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "shared", "models", "synthetic", "synth-bert.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: %s is absent (the shared models are not checked out)", p)
	}
	return p
}

// f32 is a float32 written in its shortest round-trip form.
type f32 float32

func (v *f32) UnmarshalJSON(b []byte) error {
	x, err := strconv.ParseFloat(string(b), 32)
	*v = f32(x)
	return err
}

// bertCase is one text of the reference with llama.cpp's outputs.
type bertCase struct {
	Name         string  `json:"name"`
	Text         string  `json:"text"`
	IDs          []int32 `json:"ids"`
	Embedding    []f32   `json:"embedding"`
	Unnormalized []f32   `json:"embedding_unnormalized"`
}

type bertReference struct {
	NEmbd     int `json:"n_embd"`
	Tolerance struct {
		Table struct {
			Embedding float64 `json:"embedding_max_abs"`
			Tokens    float64 `json:"token_embeddings_max_abs"`
		} `json:"engine_with_ggml_f16_gelu_table"`
	} `json:"tolerance"`
	Texts []bertCase `json:"texts"`
}

func loadBertReference(t testing.TB) bertReference {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "synthetic", "synth-bert.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r bertReference
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Texts) < 4 || r.Tolerance.Table.Embedding == 0 || r.NEmbd == 0 {
		t.Fatal("the reference lacks texts, n_embd or tolerances")
	}
	return r
}

func maxAbsDiff(got []float32, want []f32) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var m float64
	for i, w := range want {
		m = max(m, math.Abs(float64(got[i])-float64(w)))
	}
	return m
}

// bertClient starts a runner and loads synth-bert.
func bertClient(t *testing.T, args ...string) (*client.Client, proto.Status) {
	t.Helper()
	path := synthBert(t)
	c := startClient(t, client.Options{}, "runner", args...)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	st, err := c.Load(ctx, proto.LoadSpec{ModelPath: path, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c, st
}

func texts(cases []bertCase) []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.Text
	}
	return out
}

func embed(t *testing.T, c *client.Client, task string, req request.EmbedRequest) request.EmbedResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := c.Embed(ctx, task, req)
	if err != nil {
		t.Fatalf("Embed(%s): %v", task, err)
	}
	return res
}

// TestEmbedMatchesLlamaCpp embeds the reference texts through a real runner
// subprocess and compares every vector with llama.cpp's, normalised within
// the reference's bound and pooled within the per-token bound.
func TestEmbedMatchesLlamaCpp(t *testing.T) {
	ref := loadBertReference(t)
	c, st := bertClient(t)
	if st.State != proto.StateReady || st.WeightBytes <= 0 || st.ContextTokens <= 0 {
		t.Fatalf("status %+v, want ready with the weights' size and the model's positions", st)
	}
	wantTokens := 0
	for _, tc := range ref.Texts {
		wantTokens += len(tc.IDs)
	}
	no := false
	for _, tt := range []struct {
		name      string
		normalize *bool
		want      func(bertCase) []f32
		bound     float64
	}{
		{name: "normalized", want: func(c bertCase) []f32 { return c.Embedding }, bound: ref.Tolerance.Table.Embedding},
		{name: "pooled", normalize: &no, want: func(c bertCase) []f32 { return c.Unnormalized }, bound: ref.Tolerance.Table.Tokens},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := embed(t, c, tt.name, request.EmbedRequest{Model: "synth-bert", Inputs: texts(ref.Texts), Normalize: tt.normalize})
			if len(res.Embeddings) != len(ref.Texts) {
				t.Fatalf("%d embeddings for %d inputs", len(res.Embeddings), len(ref.Texts))
			}
			if res.PromptTokens != wantTokens {
				t.Errorf("prompt tokens %d, want %d (llama.cpp's ids)", res.PromptTokens, wantTokens)
			}
			for i, tc := range ref.Texts {
				if d := maxAbsDiff(res.Embeddings[i], tt.want(tc)); d > tt.bound {
					t.Errorf("%s: max |Δ| %.3g against llama.cpp, bound %g", tc.Name, d, tt.bound)
				}
			}
		})
	}
	// One input alone gives the same vector as in a batch, bit for bit, and
	// dimensions equal to the model's own is accepted.
	for _, tc := range ref.Texts {
		one := embed(t, c, "one-"+tc.Name, request.EmbedRequest{Model: "synth-bert", Inputs: []string{tc.Text}, Dimensions: ref.NEmbd})
		if d := maxAbsDiff(one.Embeddings[0], tc.Embedding); d > ref.Tolerance.Table.Embedding || one.PromptTokens != len(tc.IDs) {
			t.Errorf("%s alone: max |Δ| %.3g, %d tokens (want %d)", tc.Name, d, one.PromptTokens, len(tc.IDs))
		}
	}
}

// TestEmbedErrors checks the refusals of an encoder runner, and that it
// keeps serving after them.
func TestEmbedErrors(t *testing.T) {
	ref := loadBertReference(t)
	c, st := bertClient(t)
	tests := []struct {
		name  string
		req   request.EmbedRequest
		class fault.Class
		param string
		msg   string
	}{
		{name: "no_inputs", req: request.EmbedRequest{Model: "m"}, class: fault.ClassInvalid, param: "input", msg: "at least one"},
		{name: "empty_input", req: request.EmbedRequest{Model: "m", Inputs: []string{"a", ""}}, class: fault.ClassInvalid, param: "input", msg: "input[1] is empty"},
		{name: "other_dimensions", req: request.EmbedRequest{Model: "m", Inputs: []string{"a"}, Dimensions: ref.NEmbd / 2}, class: fault.ClassInvalid, param: "dimensions",
			msg: fmt.Sprintf("produces %d-dimensional", ref.NEmbd)},
		{name: "negative_dimensions", req: request.EmbedRequest{Model: "m", Inputs: []string{"a"}, Dimensions: -1}, class: fault.ClassInvalid, param: "dimensions"},
		{name: "over_positions", req: request.EmbedRequest{Model: "m", Inputs: []string{"a", strings.Repeat("word ", st.ContextTokens)}}, class: fault.ClassInvalid, param: "input",
			msg: fmt.Sprintf("input[1] is %d tokens", st.ContextTokens+2)},
		{name: "too_many_inputs", req: request.EmbedRequest{Model: "m", Inputs: make([]string, request.MaxEmbedInputs+1)}, class: fault.ClassInvalid, param: "input", msg: "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Embed(t.Context(), tt.name, tt.req)
			e, ok := errors.AsType[*fault.Error](err)
			if !ok || e.Class != tt.class || e.Param != tt.param || !strings.Contains(e.Message, tt.msg) {
				t.Fatalf("error %#v, want %s on %q containing %q", err, tt.class, tt.param, tt.msg)
			}
		})
	}
	t.Run("generate", func(t *testing.T) {
		r := generateAll(t, c, "generate", request.Request{Model: "my-bert", Prompt: "hello"})
		if len(r.chunks) != 1 || r.last.Kind != request.ChunkError || r.last.Error.Class != fault.ClassInvalid ||
			!strings.Contains(r.last.Error.Message, "model my-bert is an embedding model") {
			t.Fatalf("chunks %+v, want one invalid_request error chunk naming the embedding model", r.chunks)
		}
	})
	t.Run("still_serving", func(t *testing.T) {
		res := embed(t, c, "after", request.EmbedRequest{Model: "m", Inputs: []string{ref.Texts[0].Text}})
		if d := maxAbsDiff(res.Embeddings[0], ref.Texts[0].Embedding); d > ref.Tolerance.Table.Embedding {
			t.Fatalf("after the errors: max |Δ| %.3g", d)
		}
	})
}

// TestEmbedOnDecoder checks that a decoder refuses embed commands and still
// generates.
func TestEmbedOnDecoder(t *testing.T) {
	c := loadedClient(t, proto.LoadSpec{})
	_, err := c.Embed(t.Context(), "e", request.EmbedRequest{Model: "stories260K", Inputs: []string{"Once upon a time"}})
	e, ok := errors.AsType[*fault.Error](err)
	if !ok || e.Class != fault.ClassInvalid || e.Message != "this model does not produce embeddings" {
		t.Fatalf("Embed on a decoder: %#v, want invalid_request %q", err, "this model does not produce embeddings")
	}
	r := generateAll(t, c, "g", greedy("Once upon a time", 3))
	if r.last.Kind != request.ChunkDone || r.last.Usage.CompletionTokens != 3 {
		t.Fatalf("generate after the refusal: %+v", r.last)
	}
}

// TestEmbedConcurrent runs more embed tasks than slots at once: the queued
// ones wait their turn and every answer is llama.cpp's.
func TestEmbedConcurrent(t *testing.T) {
	ref := loadBertReference(t)
	c, _ := bertClient(t, "-slots", "2")
	const tasks = 8
	errs := make(chan error, tasks)
	var wg sync.WaitGroup
	for i := range tasks {
		tc := ref.Texts[i%len(ref.Texts)]
		wg.Go(func() {
			res, err := c.Embed(t.Context(), fmt.Sprintf("task-%d", i), request.EmbedRequest{Model: "m", Inputs: []string{tc.Text}})
			if err == nil {
				if d := maxAbsDiff(res.Embeddings[0], tc.Embedding); d > ref.Tolerance.Table.Embedding {
					err = fmt.Errorf("task-%d (%s): max |Δ| %.3g", i, tc.Name, d)
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestEmbedProtocol speaks the protocol to a real runner child line by
// line, so the order of commands is exact: an embed before the load, a
// duplicate task id, cancelling a queued and a running embed task, and a
// shutdown under a running one.
func TestEmbedProtocol(t *testing.T) {
	ref := loadBertReference(t)
	path := synthBert(t)
	p, err := supervise.Start(t.Context(), childSpec("runner", "-slots", "1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Kill(ctx)
	})
	msgs := make(chan proto.Message, 16)
	go func() {
		defer close(msgs)
		lr := proto.NewLineReader(p.Stdout(), proto.MaxLine)
		for {
			line, err := lr.Next()
			if err != nil {
				return
			}
			m, err := proto.DecodeMessage(line)
			if err != nil {
				t.Errorf("the runner wrote a bad line %q: %v", line, err)
				return
			}
			if m.Type == proto.TypeProgress {
				continue // heartbeats
			}
			msgs <- m
		}
	}()
	next := func() proto.Message {
		t.Helper()
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("the runner's stdout ended")
			}
			return m
		case <-time.After(60 * time.Second):
			t.Fatal("no answer from the runner")
		}
		return proto.Message{}
	}
	write := func(cmd proto.Command) {
		t.Helper()
		line, err := proto.MarshalLine(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Stdin().Write(line); err != nil {
			t.Fatal(err)
		}
	}
	wantError := func(m proto.Message, typ proto.MessageType, task string, class fault.Class) {
		t.Helper()
		if m.Type != typ || m.Task != task || m.Error == nil || m.Error.Class != class {
			t.Fatalf("got %+v (error %+v), want a %s message for %q with a %s error", m, m.Error, typ, task, class)
		}
	}
	long := make([]string, request.MaxEmbedInputs)
	for i := range long {
		long[i] = ref.Texts[2].Text
	}
	embedCmd := func(task string, inputs []string) proto.Command {
		return proto.Command{Op: proto.OpEmbed, Embed: &proto.EmbedCmd{Task: task, Request: request.EmbedRequest{Model: "m", Inputs: inputs}}}
	}
	cancelCmd := func(task string) proto.Command {
		return proto.Command{Op: proto.OpCancel, Cancel: &proto.CancelCmd{Task: task}}
	}

	write(embedCmd("early", []string{"x"}))
	wantError(next(), proto.TypeEmbedding, "early", fault.ClassUnavailable)

	write(proto.Command{Op: proto.OpLoad, Load: &proto.LoadSpec{ModelPath: path, Threads: 1}})
	for _, want := range []proto.State{proto.StateLoading, proto.StateWarming, proto.StateReady} {
		if m := next(); m.Type != proto.TypeStatus || m.Status.State != want {
			t.Fatalf("got %+v, want status %s", m, want)
		}
	}
	write(embedCmd("ok", []string{ref.Texts[0].Text}))
	m := next()
	if m.Type != proto.TypeEmbedding || m.Task != "ok" || m.Embedding == nil || m.Error != nil {
		t.Fatalf("got %+v, want the embedding of task ok", m)
	}
	if d := maxAbsDiff(m.Embedding.Embeddings[0], ref.Texts[0].Embedding); d > ref.Tolerance.Table.Embedding {
		t.Fatalf("max |Δ| %.3g against llama.cpp", d)
	}

	// One slot: a runs, b waits. The duplicate id is refused at once, b's
	// cancel answers b from the queue, a's cancel stops a between inputs.
	write(embedCmd("a", long))
	write(embedCmd("a", []string{"x"}))
	write(embedCmd("b", []string{"x"}))
	write(cancelCmd("b"))
	write(cancelCmd("a"))
	wantError(next(), proto.TypeError, "a", fault.ClassConflict)
	wantError(next(), proto.TypeEmbedding, "b", fault.ClassCancelled)
	wantError(next(), proto.TypeEmbedding, "a", fault.ClassCancelled)

	// A shutdown cancels the running task, which answers before the runner
	// says it stopped.
	write(embedCmd("c", long))
	write(proto.Command{Op: proto.OpShutdown})
	wantError(next(), proto.TypeEmbedding, "c", fault.ClassCancelled)
	if m := next(); m.Type != proto.TypeStatus || m.Status.State != proto.StateStopped {
		t.Fatalf("got %+v, want status stopped", m)
	}
	p.Stdin().Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if e, err := p.Wait(ctx); err != nil || !e.Success() {
		t.Fatalf("runner exit: %s, %v", e, err)
	}
}

// heavyInputs is the largest request Validate allows of ~300-token texts:
// tens of seconds of work for synth-bert on one thread (2048 inputs of 18
// tokens take about a second).
func heavyInputs(ref bertReference) []string {
	text := strings.Repeat(ref.Texts[2].Text+" ", 19)
	n := min(request.MaxEmbedInputs, request.MaxEmbedBytes/len(text))
	out := make([]string, n)
	for i := range out {
		out[i] = text
	}
	return out
}

// heavyBound is far below the time heavyInputs takes: a test that waits
// for less than this cannot have waited for the whole heavy task.
const heavyBound = 5 * time.Second

// TestEmbedContextAbandons checks that an Embed whose context ends returns
// at once with the context's error, and that the runner, told to cancel
// the task, frees its only slot for the next task.
func TestEmbedContextAbandons(t *testing.T) {
	ref := loadBertReference(t)
	c, _ := bertClient(t, "-slots", "1")
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.Embed(ctx, "abandoned", request.EmbedRequest{Model: "m", Inputs: heavyInputs(ref)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Embed past its deadline: %v, want context.DeadlineExceeded", err)
	}
	res := embed(t, c, "next", request.EmbedRequest{Model: "m", Inputs: []string{ref.Texts[0].Text}})
	if d := maxAbsDiff(res.Embeddings[0], ref.Texts[0].Embedding); d > ref.Tolerance.Table.Embedding {
		t.Fatalf("max |Δ| %.3g", d)
	}
	if took := time.Since(start); took > heavyBound {
		t.Fatalf("the next task was answered after %v: the abandoned task was not cancelled", took)
	}
}

// cpuTicks is the CPU time process pid has used, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("skipping: no /proc to watch the runner's CPU time: %v", err)
	}
	// Fields after the parenthesised command: state is field 3, utime 14,
	// stime 15.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	u, err1 := strconv.Atoi(f[11])
	s, err2 := strconv.Atoi(f[12])
	if err1 != nil || err2 != nil {
		t.Fatalf("cannot parse /proc/%d/stat: %q", pid, b)
	}
	return u + s
}

// TestEmbedRunnerKilled checks that a runner dying under an embed task
// answers it with an internal error, and later calls with ErrClosed.
func TestEmbedRunnerKilled(t *testing.T) {
	ref := loadBertReference(t)
	c, _ := bertClient(t, "-slots", "1")
	idle := cpuTicks(t, c.Pid())
	done := make(chan error, 1)
	go func() {
		_, err := c.Embed(t.Context(), "doomed", request.EmbedRequest{Model: "m", Inputs: heavyInputs(ref)})
		done <- err
	}()
	// An idle runner uses no CPU; once it has worked for a fifth of a
	// second, the task is running.
	deadline := time.Now().Add(30 * time.Second)
	for cpuTicks(t, c.Pid()) < idle+20 {
		if time.Now().After(deadline) {
			t.Fatal("the runner never started the task")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		e, ok := errors.AsType[*fault.Error](err)
		if !ok || e.Class != fault.ClassInternal || !strings.Contains(e.Message, "killed") {
			t.Fatalf("Embed under a killed runner: %#v, want an internal error naming the kill", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Embed did not return after the runner died")
	}
	if _, err := c.Embed(t.Context(), "late", request.EmbedRequest{Model: "m", Inputs: []string{"x"}}); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Embed on a dead runner: %v, want ErrClosed", err)
	}
}

func TestDecodeEmbedLines(t *testing.T) {
	commands := []struct {
		name string
		line string
		ok   bool
	}{
		{name: "embed", line: `{"op":"embed","embed":{"task":"t","request":{"model":"m","inputs":["a","b"],"normalize":false,"dimensions":384}}}`, ok: true},
		{name: "embed_without_task", line: `{"op":"embed","embed":{"request":{"model":"m","inputs":["a"]}}}`},
		{name: "embed_without_payload", line: `{"op":"embed"}`},
		{name: "embed_unknown_field", line: `{"op":"embed","embed":{"task":"t","request":{"model":"m","inputs":["a"],"truncate":true}}}`},
		{name: "embed_with_generate", line: `{"op":"embed","embed":{"task":"t","request":{"model":"m"}},"generate":{"task":"t","request":{"model":"m","chat":false,"sampling":{}}}}`},
		{name: "generate_with_embed", line: `{"op":"generate","generate":{"task":"t","request":{"model":"m","chat":false,"sampling":{}}},"embed":{"task":"t","request":{"model":"m"}}}`},
	}
	for _, tt := range commands {
		t.Run("command_"+tt.name, func(t *testing.T) {
			c, err := proto.DecodeCommand([]byte(tt.line))
			if (err == nil) != tt.ok {
				t.Fatalf("DecodeCommand(%s) = %+v, %v; want ok=%v", tt.line, c, err, tt.ok)
			}
			if tt.ok && (c.Embed.Task != "t" || len(c.Embed.Request.Inputs) != 2 || c.Embed.Request.Normalized() || c.Embed.Request.Dimensions != 384) {
				t.Fatalf("decoded %+v", c.Embed)
			}
		})
	}
	messages := []struct {
		name string
		line string
		ok   bool
	}{
		{name: "result", line: `{"type":"embedding","task":"t","embedding":{"embeddings":[[0.5,-0.25]],"prompt_tokens":3}}`, ok: true},
		{name: "error", line: `{"type":"embedding","task":"t","error":{"class":"invalid_request","message":"this model does not produce embeddings"}}`, ok: true},
		{name: "both", line: `{"type":"embedding","task":"t","embedding":{"embeddings":[],"prompt_tokens":0},"error":{"class":"internal","message":"x"}}`},
		{name: "neither", line: `{"type":"embedding","task":"t"}`},
		{name: "without_task", line: `{"type":"embedding","embedding":{"embeddings":[],"prompt_tokens":0}}`},
		{name: "chunk_with_embedding", line: `{"type":"chunk","task":"t","chunk":{"kind":"done"},"embedding":{"embeddings":[],"prompt_tokens":0}}`},
		{name: "unknown_field", line: `{"type":"embedding","task":"t","embedding":{"embeddings":[],"prompt_tokens":0,"model":"m"}}`},
		{name: "progress", line: `{"type":"progress","progress":{"steps":3,"in_step":true}}`, ok: true},
		{name: "progress_without_payload", line: `{"type":"progress"}`},
		{name: "progress_with_task", line: `{"type":"progress","task":"t","progress":{"steps":3}}`},
		{name: "chunk_with_progress", line: `{"type":"chunk","task":"t","chunk":{"kind":"done"},"progress":{"steps":3}}`},
	}
	for _, tt := range messages {
		t.Run("message_"+tt.name, func(t *testing.T) {
			if _, err := proto.DecodeMessage([]byte(tt.line)); (err == nil) != tt.ok {
				t.Fatalf("DecodeMessage(%s) = %v, want ok=%v", tt.line, err, tt.ok)
			}
		})
	}
}

// TestEncoderLoadRange checks which layer ranges an encoder loads: the
// whole model, as blocks [0, 0) or as all its blocks on one rank, and no
// pipeline stage.
func TestEncoderLoadRange(t *testing.T) {
	path := synthBert(t)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	n, ok := f.Uint("bert.block_count")
	f.Close()
	if !ok || n < 2 {
		t.Fatalf("synth-bert has bert.block_count %d, %v; want at least 2", n, ok)
	}
	tests := []struct {
		name string
		spec proto.LoadSpec
		ok   bool
	}{
		{name: "whole", spec: proto.LoadSpec{}, ok: true},
		{name: "one_rank", spec: proto.LoadSpec{End: int(n), First: true, Last: true}, ok: true},
		{name: "first_stage", spec: proto.LoadSpec{End: 1, First: true}},
		{name: "last_stage", spec: proto.LoadSpec{Start: 1, End: int(n), Last: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startClient(t, client.Options{}, "runner")
			tt.spec.ModelPath, tt.spec.Threads = path, 1
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			_, err := c.Load(ctx, tt.spec)
			if tt.ok && err != nil {
				t.Fatal(err)
			}
			if le, isLoad := errors.AsType[*client.LoadError](err); !tt.ok && (!isLoad || !strings.Contains(le.Status.Reason, "only whole models are served")) {
				t.Fatalf("Load(%+v) = %v, want a load failure saying only whole models are served", tt.spec, err)
			}
		})
	}
}
