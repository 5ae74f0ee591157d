package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// cliGeneration is what `skulk generate --json` prints.
type cliGeneration struct {
	PromptTokens []int32 `json:"prompt_tokens"`
	Tokens       []int32 `json:"tokens"`
	Text         string  `json:"text"`
	FinishReason string  `json:"finish_reason"`
	Seed         uint64  `json:"seed"`
	DraftN       int     `json:"draft_n"`
	DraftAccN    int     `json:"draft_n_accepted"`
}

func generateJSON(t *testing.T, args ...string) cliGeneration {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"generate", "--json", "--threads", "1"}, args...)...)
	if code != 0 {
		t.Fatalf("skulk generate %q: exit %d: %s", args, code, errs)
	}
	var g cliGeneration
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return g
}

// runnerGeneration is one task's answer from a runner.
type runnerGeneration struct {
	content string
	pieces  [][]byte // each generated token's bytes, from the logprobs
	usage   request.Usage
	finish  string
}

// runnerProc is `skulk runner` run in this process, spoken to over pipes
// with the protocol a node uses.
type runnerProc struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan int
}

func startRunner(t *testing.T, spec proto.LoadSpec) *runnerProc {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &runnerProc{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan int, 1)}
	p.out.Buffer(nil, proto.MaxLine+1)
	var errs bytes.Buffer
	go func() {
		p.done <- run(context.Background(), []string{"runner"}, stdio{inR, outW, &errs})
		outW.Close()
	}()
	t.Cleanup(func() {
		p.send(proto.Command{Op: proto.OpShutdown})
		inW.Close()
		for p.out.Scan() {
		}
		select {
		case code := <-p.done:
			if code != 0 {
				t.Errorf("the runner exited %d: %s", code, errs.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("the runner did not stop")
		}
	})
	p.send(proto.Command{Op: proto.OpLoad, Load: &spec})
	for {
		m := p.next()
		if m.Type == proto.TypeStatus && m.Status.State == proto.StateReady {
			return p
		}
		if m.Type != proto.TypeStatus || m.Status.State == proto.StateFailed {
			t.Fatalf("loading: %+v (%s)", m, errs.String())
		}
	}
}

func (p *runnerProc) send(c proto.Command) {
	b, err := json.Marshal(c)
	if err != nil {
		p.t.Fatal(err)
	}
	p.in.Write(append(b, '\n'))
}

// next returns the runner's next message, its heartbeats skipped.
func (p *runnerProc) next() proto.Message {
	p.t.Helper()
	for {
		if !p.out.Scan() {
			p.t.Fatalf("the runner's output ended: %v", p.out.Err())
		}
		m, err := proto.DecodeMessage(p.out.Bytes())
		if err != nil {
			p.t.Fatal(err)
		}
		if m.Type != proto.TypeProgress {
			return m
		}
	}
}

func (p *runnerProc) generate(task string, req request.Request) runnerGeneration {
	p.t.Helper()
	p.send(proto.Command{Op: proto.OpGenerate, Generate: &proto.GenerateCmd{Task: task, Request: req}})
	var g runnerGeneration
	for {
		m := p.next()
		if m.Type != proto.TypeChunk || m.Task != task {
			p.t.Fatalf("task %s: unexpected message %+v", task, m)
		}
		c := m.Chunk
		g.content += c.Content
		for _, lp := range c.Logprobs {
			g.pieces = append(g.pieces, lp.Bytes)
		}
		switch c.Kind {
		case request.ChunkError:
			p.t.Fatalf("task %s: %v", task, c.Error)
		case request.ChunkDone:
			g.usage, g.finish = *c.Usage, c.FinishReason
			return g
		}
	}
}

// TestGenerateMatchesRunner: `skulk generate` answers a request with the
// tokens a runner gives the same request, greedy and sampled with a seed,
// and with the same defaults: a request without a temperature samples (at
// 0.8, top_p 0.95) in both.
func TestGenerateMatchesRunner(t *testing.T) {
	stories := repoFile("testdata", "models", "stories260K.gguf")
	tok, err := engine.OpenTokenizer(stories)
	if err != nil {
		t.Fatal(err)
	}
	r := startRunner(t, proto.LoadSpec{ModelPath: stories, Threads: 1})
	const prompt, maxTokens = "Once upon a time", 48
	zero, hot := 0.0, 1.3
	tests := []struct {
		name     string
		flags    []string
		sampling request.Sampling
	}{
		{name: "greedy", flags: []string{"--temperature", "0"}, sampling: request.Sampling{Temperature: &zero}},
		{name: "default_sampling_seeded", flags: []string{"--seed", "42"}, sampling: request.Sampling{Seed: new(uint64(42))}},
		{name: "sampled_top_k_min_p", flags: []string{"--seed", "7", "--temperature", "1.3", "--top-k", "40", "--min-p", "0.05"},
			sampling: request.Sampling{Seed: new(uint64(7)), Temperature: &hot, TopK: 40, MinP: 0.05}},
	}
	var greedy []int32
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli := generateJSON(t, append([]string{"--model", stories, "--prompt", prompt, "--max-tokens", strconv.Itoa(maxTokens)}, tt.flags...)...)
			req := request.Request{Prompt: prompt, Sampling: tt.sampling}
			req.Sampling.MaxTokens, req.Sampling.Logprobs = maxTokens, true
			srv := r.generate("task-"+strconv.Itoa(i), req)
			if len(cli.Tokens) == 0 || len(srv.pieces) != len(cli.Tokens) || srv.usage.CompletionTokens != len(cli.Tokens) {
				t.Fatalf("the CLI generated %d tokens, the runner %d (%d logprobs)", len(cli.Tokens), srv.usage.CompletionTokens, len(srv.pieces))
			}
			for k, id := range cli.Tokens {
				if piece := tok.Piece(id, false); piece != string(srv.pieces[k]) {
					t.Fatalf("token %d: the CLI drew %d %q, the runner %q", k, id, piece, srv.pieces[k])
				}
			}
			if cli.Text != srv.content || cli.FinishReason != srv.finish || srv.usage.PromptTokens != len(cli.PromptTokens) {
				t.Fatalf("CLI %q (%s, %d prompt tokens), runner %q (%s, %d)", cli.Text, cli.FinishReason, len(cli.PromptTokens),
					srv.content, srv.finish, srv.usage.PromptTokens)
			}
			if tt.name == "greedy" {
				greedy = cli.Tokens
			} else if slices.Equal(cli.Tokens, greedy) {
				t.Fatal("sampling gave the greedy tokens: the default temperature is not applied")
			}
		})
	}
}

// TestGenerateSeed: without --seed each run draws its own seed and prints
// it; giving that seed back reproduces the run.
func TestGenerateSeed(t *testing.T) {
	stories := repoFile("testdata", "models", "stories260K.gguf")
	args := []string{"--model", stories, "--prompt", "Once upon a time", "--max-tokens", "32"}
	a := generateJSON(t, args...)
	b := generateJSON(t, append(args, "--seed", strconv.FormatUint(a.Seed, 10))...)
	if !slices.Equal(a.Tokens, b.Tokens) || b.Seed != a.Seed {
		t.Fatalf("seed %d: %v, then %v with --seed %d", a.Seed, a.Tokens, b.Tokens, b.Seed)
	}
}

// TestGenerateSpeculative: `skulk generate --temperature 0` gives the same
// tokens with --lookup and with --draft-model as without, and reports the
// drafts in --json; a cache type the model cannot hold is a clear error.
func TestGenerateSpeculative(t *testing.T) {
	stories := repoFile("testdata", "models", "stories260K.gguf")
	base := []string{"--model", stories, "--temperature", "0", "--max-tokens", "40",
		"--prompt", "Lily and Ben went to the park. Lily and Ben went to the park. Lily and"}
	want := generateJSON(t, base...)
	for _, extra := range [][]string{{"--lookup"}, {"--draft-model", stories, "--draft-max", "3"}} {
		got := generateJSON(t, append(slices.Clone(base), extra...)...)
		if !slices.Equal(got.Tokens, want.Tokens) || got.DraftN == 0 || got.DraftAccN > got.DraftN {
			t.Errorf("%v: tokens %v (%d drafted, %d accepted), without %v", extra, got.Tokens, got.DraftN, got.DraftAccN, want.Tokens)
		}
	}
	if code, _, errs := runCLI(t, "generate", "--model", stories, "--prompt", "x", "--cache-type", "q8_0"); code == 0 || !bytes.Contains([]byte(errs), []byte("head_dim")) {
		t.Errorf("--cache-type q8_0 on head_dim 8: exit %d, %s", code, errs)
	}
}
