// Package bench measures the native engine's prefill and decode speed the
// same way bench/llamabench.c measures llama.cpp, so the two can be run side
// by side and compared as ratios (testdata/reference/PERF.md describes the method):
//
//   - pp: the KV cache is cleared, then PromptTokens pseudo-random tokens go
//     through the model as one batch;
//   - tg: the cache is cleared, then GenTokens single-token forward passes
//     are made, each on a pseudo-random token, with no sampling;
//   - one untimed warm-up of each, then Repeat timed runs, each timed by the
//     wall clock around the whole test.
//
// Both harnesses draw the same token ids from the same generator (Tokens),
// so they do the same work. Nothing here is safe for concurrent use; the
// package is imported only by cmd/skulk.
package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/skulk/skulk/internal/engine/model"
)

// Model is what Run measures; *model.Shard of a whole model satisfies it.
type Model interface {
	NewCache(capacity int) *model.Cache
	Forward(c *model.Cache, b model.Batch) (model.Result, error)
}

// Config says what to measure.
type Config struct {
	Vocab        int // token ids are drawn from [0, Vocab)
	PromptTokens int // pp batch size
	GenTokens    int // tg single-token steps
	Repeat       int // timed runs of each test
}

// Stats summarises one test's rates over the timed runs, in tokens per
// second.
type Stats struct {
	Min    float64   `json:"min"`
	Median float64   `json:"median"`
	Max    float64   `json:"max"`
	Runs   []float64 `json:"runs"`
}

// Result is one engine's measurement. bench/llamabench.c prints the same
// JSON fields, so scripts read both alike.
type Result struct {
	Engine       string `json:"engine"`
	Model        string `json:"model"`
	Threads      int    `json:"threads"`
	PromptTokens int    `json:"prompt_tokens"`
	GenTokens    int    `json:"gen_tokens"`
	Repeat       int    `json:"repeat"`
	// WeightBytes is the sum of the GGUF's tensor sizes: about what one
	// decode step streams from memory, so WeightBytes ÷ bandwidth bounds
	// decode speed.
	WeightBytes int64 `json:"weight_bytes"`
	Prefill     Stats `json:"prefill"`
	Decode      Stats `json:"decode"`
}

// Run measures m and fills the rates of a Result; the caller fills the
// descriptive fields.
func Run(ctx context.Context, m Model, cfg Config) (Result, error) {
	if cfg.Vocab <= 0 || cfg.PromptTokens <= 0 || cfg.GenTokens <= 0 || cfg.Repeat <= 0 {
		return Result{}, fmt.Errorf("bench: vocabulary, prompt tokens, generated tokens and repeat must be positive: %+v", cfg)
	}
	// One cache, cleared before each test as llama.cpp clears its KV cache,
	// so no run pays for allocating and faulting in fresh memory.
	c := m.NewCache(cfg.PromptTokens + cfg.GenTokens)
	pp := Tokens(ppSeed, cfg.PromptTokens, cfg.Vocab)
	tg := Tokens(tgSeed, cfg.GenTokens, cfg.Vocab)
	var prefill, decode []float64
	for run := -1; run < cfg.Repeat; run++ { // run -1 is the warm-up
		d, err := timePrefill(ctx, m, c, pp, cfg.Vocab)
		if err != nil {
			return Result{}, err
		}
		if run >= 0 {
			prefill = append(prefill, rate(len(pp), d))
		}
		if d, err = timeDecode(ctx, m, c, tg, cfg.Vocab); err != nil {
			return Result{}, err
		}
		if run >= 0 {
			decode = append(decode, rate(len(tg), d))
		}
	}
	return Result{
		PromptTokens: cfg.PromptTokens, GenTokens: cfg.GenTokens, Repeat: cfg.Repeat,
		Prefill: Summarize(prefill), Decode: Summarize(decode),
	}, nil
}

func timePrefill(ctx context.Context, m Model, c *model.Cache, toks []int32, vocab int) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := c.Truncate(0); err != nil {
		return 0, err
	}
	start := time.Now()
	res, err := m.Forward(c, model.Batch{Tokens: toks})
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	return d, checkLogits(res, vocab)
}

func timeDecode(ctx context.Context, m Model, c *model.Cache, toks []int32, vocab int) (time.Duration, error) {
	if err := c.Truncate(0); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := range toks {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		res, err := m.Forward(c, model.Batch{Tokens: toks[i : i+1]})
		if err != nil {
			return 0, err
		}
		if err := checkLogits(res, vocab); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// checkLogits makes sure the forward pass really ran the head: a model that
// returned early would otherwise look fast.
func checkLogits(r model.Result, vocab int) error {
	if len(r.Logits) != vocab {
		return fmt.Errorf("bench: forward pass returned %d logits, want one row of %d", len(r.Logits), vocab)
	}
	return nil
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		d = time.Nanosecond
	}
	return float64(n) / d.Seconds()
}

// Summarize returns the min, median and max of rates (the median of an even
// count is the mean of the middle two).
func Summarize(rates []float64) Stats {
	if len(rates) == 0 {
		return Stats{}
	}
	s := slices.Sorted(slices.Values(rates))
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Stats{Min: s[0], Median: med, Max: s[n-1], Runs: rates}
}

// Seeds of the pp and tg token streams; bench/llamabench.c uses the same.
const (
	ppSeed = 1
	tgSeed = 2
)

// Tokens returns n pseudo-random token ids in [0, vocab) from SplitMix64
// seeded with seed. bench/llamabench.c implements the same generator, so
// both engines see identical token ids.
func Tokens(seed uint64, n, vocab int) []int32 {
	out := make([]int32, n)
	x := seed
	for i := range out {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		out[i] = int32(z % uint64(vocab))
	}
	return out
}
