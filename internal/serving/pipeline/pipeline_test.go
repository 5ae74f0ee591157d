package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// greedyTokens is how many tokens the bit-identity tests generate.
const greedyTokens = 64

// TestBitIdentical runs the reference prompts through the model split into
// 1, 2 and 3 stages (prompts chunked and not) and checks each sequence's
// greedy tokens against the whole model in one shard.
func TestBitIdentical(t *testing.T) {
	type tc struct {
		name    string
		path    string
		prompts [][]int32
	}
	stories := testFile(t, "models/stories260K.gguf")
	cases := []tc{
		{"stories260K", stories, storiesPrompts(t)},
		{"synth-qwen3-q8_0", synthModel(t, qwen3Shape, tensor.Q8_0),
			randomPrompts(3, qwen3Shape.NVocab, 1, 7, 30, 300)}, // 300 tokens: two chunks of the default 256
		{"synth-qwen3-q8_0-2L", testFile(t, "synthetic/synth-qwen3-q8_0.gguf"),
			randomPrompts(4, 1024, 5, 17)},
		// Mixture of experts: the shape `skulk dev synth --arch qwen3moe`
		// writes (3 blocks, 2 of 8 experts).
		{"synth-qwen3moe-q4_k", synthModel(t, synth.ArchShapes()["qwen3moe"], tensor.Q4_K),
			randomPrompts(5, 1024, 1, 9, 40)},
		// glm4moe: a leading dense block, shared experts, a skipped
		// next-token-prediction block after the trunk.
		{"synth-glm4moe-q8_0", synthModel(t, synth.ArchShapes()["glm4moe"], tensor.Q8_0),
			randomPrompts(6, 1024, 1, 9, 40)},
		// deepseek2: latent attention, grouped expert selection.
		{"synth-deepseek2-q8_0", synthModel(t, synth.ArchShapes()["deepseek2"], tensor.Q8_0),
			randomPrompts(7, 1024, 1, 9, 40)},
	}
	for _, c := range cases {
		want := make([][]int32, len(c.prompts))
		for i, pr := range c.prompts {
			want[i] = reference(t, c.path, pr, greedyTokens, sample.Params{})
		}
		for _, stages := range []int{1, 2, 3} {
			for _, chunk := range []int{0, 3} {
				t.Run(fmt.Sprintf("%s/stages=%d/chunk=%d", c.name, stages, chunk), func(t *testing.T) {
					p := testPipeline(t, c.path, stages, Options{Head: HeadConfig{ChunkSize: chunk}})
					if n := p.Stage(stages - 1).cfg.Shard.Config.NLayer; n < stages {
						t.Skipf("%d blocks", n)
					}
					reqs := make([]Request, len(c.prompts))
					for i, pr := range c.prompts {
						reqs[i] = Request{Prompt: pr, MaxTokens: greedyTokens}
					}
					got := generate(t, p, reqs)
					for i := range got {
						equalTokens(t, fmt.Sprintf("prompt %d", i), got[i], want[i])
					}
				})
			}
		}
	}
}

// TestConcurrentSequences runs eight prompts at once on three stages and
// checks each against its single-shard run alone; then the same with two
// slots, so that most wait for admission.
func TestConcurrentSequences(t *testing.T) {
	path := testFile(t, "models/stories260K.gguf")
	prompts := append(storiesPrompts(t), []int32{1, 403}, []int32{1, 291, 376, 400, 428}, []int32{1, 317, 391, 266, 267, 298, 414})
	if len(prompts) < 8 {
		t.Fatalf("%d prompts", len(prompts))
	}
	prompts = prompts[:8]
	reqs := make([]Request, len(prompts))
	want := make([][]int32, len(prompts))
	for i, pr := range prompts {
		reqs[i] = Request{Prompt: pr, MaxTokens: greedyTokens}
		want[i] = reference(t, path, pr, greedyTokens, sample.Params{})
	}
	for _, slots := range []int{8, 2} {
		t.Run(fmt.Sprintf("slots=%d", slots), func(t *testing.T) {
			p := testPipeline(t, path, 3, Options{Head: HeadConfig{Slots: slots, ChunkSize: 4}})
			got := generate(t, p, reqs)
			for i := range got {
				equalTokens(t, fmt.Sprintf("sequence %d", i), got[i], want[i])
			}
			st, err := p.Stats(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range st {
				if s.Live != 0 || s.Queued != 0 {
					t.Errorf("rank %d after every sequence ended: %+v", s.Rank, s)
				}
				// Decode steps of several sequences ran together (rank 0
				// splits the live sequences into one group per rank).
				if slots >= 2*p.Ranks() && s.DecodeRows <= s.DecodeSteps {
					t.Errorf("rank %d: %d decode rows in %d steps, no batching", s.Rank, s.DecodeRows, s.DecodeSteps)
				}
				t.Logf("rank %d: %d prefill chunks, %d decode steps of %.2f sequences on average",
					s.Rank, s.PrefillChunks, s.DecodeSteps, float64(s.DecodeRows)/float64(s.DecodeSteps))
			}
		})
	}
}

// TestAdmissionOrder: with one slot, a sequence runs only after every
// earlier one has ended.
func TestAdmissionOrder(t *testing.T) {
	p := testPipeline(t, testFile(t, "models/stories260K.gguf"), 2, Options{Head: HeadConfig{Slots: 1}})
	ctx := t.Context()
	var seqs []*Sequence
	for i := range 4 {
		q, err := p.Submit(ctx, Request{Prompt: []int32{1, int32(300 + i)}, MaxTokens: 8})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, q)
	}
	st, err := p.Stage(0).Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Live > 1 {
		t.Fatalf("%d sequences admitted with one slot", st.Live)
	}
	for i := len(seqs) - 1; i >= 0; i-- {
		if _, err := seqs[i].All(ctx); err != nil {
			t.Fatal(err)
		}
		for j := range i {
			if seqs[j].Finish() == "" {
				t.Fatalf("sequence %d ended before sequence %d", i, j)
			}
		}
	}
}

// TestSeededSampling: a sampled sequence (temperature, top-k, top-p,
// penalties, a seed) equals the single-shard run with the same settings.
func TestSeededSampling(t *testing.T) {
	for _, c := range []struct {
		name, path string
	}{
		{"stories260K", testFile(t, "models/stories260K.gguf")},
		{"synth-qwen3-q8_0", synthModel(t, qwen3Shape, tensor.Q8_0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			params := []sample.Params{
				{Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: 42},
				{Temperature: 1.1, MinP: 0.05, RepeatPenalty: 1.1, PresencePenalty: 0.2, FrequencyPenalty: 0.1, RepeatLastN: -1, Seed: 7},
			}
			p := testPipeline(t, c.path, 3, Options{Head: HeadConfig{ChunkSize: 2}})
			prompt := []int32{1, 403, 407, 261, 378}
			reqs := make([]Request, len(params))
			for i, sp := range params {
				reqs[i] = Request{Prompt: prompt, MaxTokens: greedyTokens, Sample: sp}
			}
			got := generate(t, p, reqs)
			for i, sp := range params {
				equalTokens(t, fmt.Sprintf("%+v", sp), got[i], reference(t, c.path, prompt, greedyTokens, sp))
			}
		})
	}
}

// stagesHold waits until every stage holds n sequences' caches.
func stagesHold(t *testing.T, p *Pipeline, n int) {
	t.Helper()
	var last []StageStats
	waitFor(t, 10*time.Second, fmt.Sprintf("stages do not hold %d sequences: %+v", n, last), func() bool {
		st, err := p.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		last = st
		for _, s := range st {
			if s.Sequences != n {
				return false
			}
		}
		return true
	})
}

// TestCancel: cancelling a generating sequence frees its cache on every
// stage; cancelling a queued one takes it out of the queue.
func TestCancel(t *testing.T) {
	p := testPipeline(t, testFile(t, "models/stories260K.gguf"), 3, Options{Head: HeadConfig{Slots: 1}})
	ctx := t.Context()
	a, err := p.Submit(ctx, Request{Prompt: []int32{1, 403, 407}}) // until the context is full
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Submit(ctx, Request{Prompt: []int32{1, 291}})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := a.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stagesHold(t, p, 1)
	b.Cancel()
	if _, err := b.Next(ctx); !errors.Is(err, ErrCancelled) {
		t.Fatalf("queued sequence after cancel: %v", err)
	}
	a.Cancel()
	for {
		_, err := a.Next(ctx)
		if errors.Is(err, ErrCancelled) {
			break
		}
		if err != nil {
			t.Fatalf("cancelled sequence: %v", err)
		}
	}
	stagesHold(t, p, 0)
	st, err := p.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Positions != 0 || s.Pending != 0 || s.Live != 0 || s.Queued != 0 {
			t.Errorf("rank %d after cancel: %+v", s.Rank, s)
		}
	}
	// The pipeline still serves.
	want := reference(t, testFile(t, "models/stories260K.gguf"), []int32{1, 403}, 16, sample.Params{})
	equalTokens(t, "after cancel", generate(t, p, []Request{{Prompt: []int32{1, 403}, MaxTokens: 16}})[0], want)
	a.Cancel() // ended: nothing happens
}

// TestCancelRace cancels sequences at every point of their life (queued,
// opening, prefilling, decoding) and checks that every stage ends up
// holding nothing, and that rank 0 counts every decode micro-batch back,
// those of cancelled sequences included.
func TestCancelRace(t *testing.T) {
	p := testPipeline(t, testFile(t, "models/stories260K.gguf"), 3, Options{Head: HeadConfig{Slots: 3, ChunkSize: 2}})
	ctx := t.Context()
	var seqs []*Sequence
	for i := range 24 {
		q, err := p.Submit(ctx, Request{Prompt: []int32{1, 403, 407, 261, 378, 432, 383}, MaxTokens: 40})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, q)
		if i%3 == 0 {
			time.Sleep(time.Duration(i) * 100 * time.Microsecond)
		}
		if i%2 == 1 {
			seqs[i-1].Cancel()
		}
	}
	for i, q := range seqs {
		_, err := q.All(ctx)
		if i%2 == 1 && err != nil {
			t.Fatalf("sequence %d: %v", i, err)
		}
		if i%2 == 0 && err != nil && !errors.Is(err, ErrCancelled) {
			t.Fatalf("cancelled sequence %d: %v", i, err)
		}
	}
	stagesHold(t, p, 0)
	var head StageStats
	waitFor(t, 10*time.Second, "rank 0 still counts decode micro-batches in flight", func() bool {
		st, err := p.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		head = st[0]
		return head.InFlight == 0
	})
	if head.DecodeSteps == 0 {
		t.Fatal("no decode step ran: the check above saw nothing")
	}
}

// TestLinkFault closes the link between ranks 1 and 2 while four
// sequences generate: each ends with a *FaultError in bounded time and
// every stage stops.
func TestLinkFault(t *testing.T) {
	var links []Link
	p := testPipeline(t, testFile(t, "models/stories260K.gguf"), 3, Options{
		NewLink: func(edge, ranks int) (Link, error) {
			l := NewChanLink(2)
			links = append(links, l)
			return l, nil
		},
	})
	ctx := t.Context()
	var seqs []*Sequence
	for i := range 4 {
		q, err := p.Submit(ctx, Request{Prompt: []int32{1, int32(400 + i)}})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, q)
	}
	for _, q := range seqs {
		if _, err := q.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	links[1].Close()
	bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for i, q := range seqs {
		_, err := q.All(bounded)
		var fe *FaultError
		if !errors.As(err, &fe) || !errors.Is(err, ErrLinkClosed) {
			t.Fatalf("sequence %d: %v, want a fault of a closed link", i, err)
		}
	}
	for i := range p.Ranks() {
		select {
		case <-p.Stage(i).Done():
		case <-bounded.Done():
			t.Fatalf("rank %d still runs after the fault", i)
		}
		var fe *FaultError
		if err := p.Stage(i).Err(); !errors.As(err, &fe) {
			t.Errorf("rank %d stopped with %v", i, err)
		}
	}
	t.Logf("every sequence ended %v after the link closed", time.Since(start))
	if _, err := p.Submit(ctx, Request{Prompt: []int32{1}}); !errors.Is(err, ErrLinkClosed) {
		t.Errorf("submit after the fault: %v", err)
	}
}

// TestCloseStopsEverything: Close ends the sequences in flight with
// ErrStopped and leaves no goroutine behind.
func TestCloseStopsEverything(t *testing.T) {
	base := runtime.NumGoroutine()
	path := testFile(t, "models/stories260K.gguf")
	func() {
		p := testPipeline(t, path, 3, Options{})
		ctx := t.Context()
		q, err := p.Submit(ctx, Request{Prompt: []int32{1, 403}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Next(ctx); err != nil {
			t.Fatal(err)
		}
		p.Close()
		if _, err := q.All(ctx); !errors.Is(err, ErrStopped) {
			t.Fatalf("after Close: %v", err)
		}
		if _, err := q.Next(ctx); !errors.Is(err, ErrStopped) {
			t.Fatalf("Next again: %v", err)
		}
	}()
	checkGoroutines(t, base, 5*time.Second)
}

// TestSubmitErrors: requests the head refuses at once.
func TestSubmitErrors(t *testing.T) {
	p := testPipeline(t, testFile(t, "models/stories260K.gguf"), 2, Options{Head: HeadConfig{Context: 16}})
	ctx := t.Context()
	for _, c := range []struct {
		name string
		req  Request
	}{
		{"empty", Request{}},
		{"vocabulary", Request{Prompt: []int32{1, 512}}},
		{"negative", Request{Prompt: []int32{-1}}},
		{"context", Request{Prompt: make([]int32, 16)}},
		{"sampling", Request{Prompt: []int32{1}, Sample: sample.Params{Temperature: -1}}},
		{"max tokens", Request{Prompt: []int32{1}, MaxTokens: -1}},
	} {
		if _, err := p.Submit(ctx, c.req); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if _, err := p.Stage(1).Submit(ctx, Request{Prompt: []int32{1}}); !errors.Is(err, ErrNotHead) {
		t.Errorf("submit to rank 1: %v", err)
	}
	// The context caps the generation as it does the engine's.
	q, err := p.Submit(ctx, Request{Prompt: []int32{1, 403, 407}})
	if err != nil {
		t.Fatal(err)
	}
	toks, err := q.All(ctx)
	if err != nil || len(toks) != 13 || q.Finish() != FinishLength {
		t.Fatalf("%d tokens, %v, finish %q; want 13 and length", len(toks), err, q.Finish())
	}
	if _, err := q.Next(ctx); err != io.EOF {
		t.Fatalf("after the end: %v", err)
	}
}
