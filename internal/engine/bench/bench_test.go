package bench

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/model"
)

// counting passes every call to the real shard and records what it was
// asked to do, so the test can check the harness did exactly the work a
// measurement claims.
type counting struct {
	*model.Shard
	batches []int // tokens per Forward call
	starts  []int // cache length at each call
	caches  int
}

func (c *counting) NewCache(n int) *model.Cache {
	c.caches++
	return c.Shard.NewCache(n)
}

func (c *counting) Forward(cache *model.Cache, b model.Batch) (model.Result, error) {
	c.batches = append(c.batches, len(b.Tokens))
	c.starts = append(c.starts, cache.Len())
	return c.Shard.Forward(cache, b)
}

func TestRunStories(t *testing.T) {
	m, err := engine.Open(filepath.Join("..", "..", "..", "testdata", "models", "stories260K.gguf"), engine.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := &counting{Shard: m.Shard}
	const pp, tg, repeat = 5, 3, 3
	res, err := Run(t.Context(), c, Config{Vocab: m.Config.NVocab, PromptTokens: pp, GenTokens: tg, Repeat: repeat})
	if err != nil {
		t.Fatal(err)
	}
	// Warm-up plus repeat runs, each one prefill batch then tg single
	// tokens, each test starting from an empty cache.
	var wantBatches, wantStarts []int
	for range repeat + 1 {
		wantBatches = append(wantBatches, pp)
		wantStarts = append(wantStarts, 0)
		for i := range tg {
			wantBatches = append(wantBatches, 1)
			wantStarts = append(wantStarts, i)
		}
	}
	if !slices.Equal(c.batches, wantBatches) || !slices.Equal(c.starts, wantStarts) {
		t.Errorf("batches %v from cache lengths %v, want %v from %v", c.batches, c.starts, wantBatches, wantStarts)
	}
	if c.caches != 1 {
		t.Errorf("%d caches made, want one reused", c.caches)
	}
	if res.PromptTokens != pp || res.GenTokens != tg || res.Repeat != repeat {
		t.Errorf("result describes pp%d tg%d ×%d", res.PromptTokens, res.GenTokens, res.Repeat)
	}
	for name, st := range map[string]Stats{"prefill": res.Prefill, "decode": res.Decode} {
		if len(st.Runs) != repeat {
			t.Errorf("%s: %d runs, want %d", name, len(st.Runs), repeat)
		}
		if !(st.Min > 0 && st.Min <= st.Median && st.Median <= st.Max) {
			t.Errorf("%s: min %v, median %v, max %v are not ordered positive rates", name, st.Min, st.Median, st.Max)
		}
		if st.Min != slices.Min(st.Runs) || st.Max != slices.Max(st.Runs) {
			t.Errorf("%s: min/max %v/%v do not match runs %v", name, st.Min, st.Max, st.Runs)
		}
	}
}

func TestRunRejectsEmptyTests(t *testing.T) {
	if _, err := Run(context.Background(), nil, Config{Vocab: 10, PromptTokens: 0, GenTokens: 1, Repeat: 1}); err == nil {
		t.Fatal("no error for a zero-token prefill test")
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	m, err := engine.Open(filepath.Join("..", "..", "..", "testdata", "models", "stories260K.gguf"), engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Run(ctx, m.Shard, Config{Vocab: m.Config.NVocab, PromptTokens: 2, GenTokens: 2, Repeat: 1}); err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name  string
		runs  []float64
		stats Stats
	}{
		{"odd", []float64{3, 1, 2}, Stats{Min: 1, Median: 2, Max: 3}},
		{"even", []float64{4, 1, 3, 2}, Stats{Min: 1, Median: 2.5, Max: 4}},
		{"one", []float64{7}, Stats{Min: 7, Median: 7, Max: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.runs)
			if got.Min != tt.stats.Min || got.Median != tt.stats.Median || got.Max != tt.stats.Max || !slices.Equal(got.Runs, tt.runs) {
				t.Errorf("got %+v, want %+v", got, tt.stats)
			}
		})
	}
}

// TestTokens pins the SplitMix64 stream: bench/llamabench.c draws the same
// ids, and a change here must be made there too.
func TestTokens(t *testing.T) {
	got := Tokens(ppSeed, 5, 32000)
	want := []int32{22465, 28519, 10590, 20235, 24761} // also what llamabench.c's tokens() gives
	if !slices.Equal(got, want) {
		t.Errorf("Tokens(1, 5, 32000) = %v", got)
	}
}
