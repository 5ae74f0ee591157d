package runner

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/serving/runner/client"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// openStories opens stories260K for in-process tests.
func openStories(t testing.TB, threads int) *engine.Model {
	t.Helper()
	m, err := engine.Open(modelPath(t), engine.Options{Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// batchedGenerate runs the engine's loop greedily through b, as a task
// does, and returns the tokens and how many prompt tokens were reused.
func batchedGenerate(ctx context.Context, m *engine.Model, b *batcher, prompt []int32, n int) ([]int32, int, error) {
	var seq *batchSeq
	defer func() {
		if seq != nil {
			b.finish(seq)
		}
	}()
	p := engine.GenerateParams{MaxTokens: n,
		Prefill: func(prompt []int32, capacity int) (*model.Cache, []float32, error) {
			var err error
			seq, err = b.prefill(ctx, prompt, capacity, nil)
			if err != nil {
				return nil, nil, err
			}
			return nil, seq.logits, nil
		},
		Step: func(_ *model.Cache, tok int32) ([]float32, error) { return b.step(ctx, seq, tok) },
	}
	var out []int32
	_, err := m.Generate(ctx, prompt, p, func(t engine.Token) error {
		if t.ID >= 0 {
			out = append(out, t.ID)
		}
		return nil
	})
	reused := 0
	if seq != nil {
		reused = seq.reused
	}
	return out, reused, err
}

// soloGenerate is the plain loop, alone: no batcher.
func soloGenerate(t *testing.T, m *engine.Model, prompt []int32, n int) []int32 {
	t.Helper()
	var out []int32
	if _, err := m.Generate(t.Context(), prompt, engine.GenerateParams{MaxTokens: n}, func(tok engine.Token) error {
		if tok.ID >= 0 {
			out = append(out, tok.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// storyPrompt is a prompt of about words words in stories260K's tongue.
func storyPrompt(rng *rand.Rand, words int) string {
	vocab := strings.Fields("once upon a time there was a little girl named lily she liked to play with her ball in the park " +
		"one day the sun was big and a dog came to see tom he was happy and said hello they ran to the tree")
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocab[rng.IntN(len(vocab))])
		if rng.IntN(9) == 0 {
			b.WriteString(".")
		}
	}
	return b.String()
}

// TestBatcherSixteenStaggered: sixteen greedy generations arrive at
// staggered times with long prompts (some sharing a long prefix, so the
// prefix cache serves them), their prompts read 64 tokens a step between
// the others' decode steps; each gets the tokens it gets alone, and the
// steps did mix prompt chunks with decode steps.
func TestBatcherSixteenStaggered(t *testing.T) {
	m := openStories(t, 2)
	rng := rand.New(rand.NewPCG(5, 6))
	const seqs, gen = 16, 24
	shared := storyPrompt(rng, 250)
	prompts := make([][]int32, seqs)
	solo := make([][]int32, seqs)
	for i := range prompts {
		text := storyPrompt(rng, 150+rng.IntN(400))
		if i%4 == 3 {
			text = shared + " " + storyPrompt(rng, 20+rng.IntN(50))
		}
		prompts[i] = m.EncodePrompt(text)
		solo[i] = soloGenerate(t, m, prompts[i], gen)
	}
	var mu sync.Mutex
	mixed, chunked := 0, 0
	b := newBatcher(m.Shard, batchConfig{gather: stepGather, budget: DefaultStepBudget, chunk: 64, prefixBytes: 64 << 20},
		func(wants []want, rows []int) {
			dec, pre := false, false
			for i, r := range rows {
				dec = dec || (r > 0 && wants[i].decode)
				pre = pre || (r > 0 && !wants[i].decode)
				if r > 0 && !wants[i].decode && r < wants[i].left {
					mu.Lock()
					chunked++
					mu.Unlock()
				}
			}
			if dec && pre {
				mu.Lock()
				mixed++
				mu.Unlock()
			}
		})
	t.Cleanup(b.close)
	got := make([][]int32, seqs)
	reused := make([]int, seqs)
	errs := make([]error, seqs)
	var wg sync.WaitGroup
	for i := range seqs {
		wg.Add(1)
		delay := time.Duration(i*15+rng.IntN(10)) * time.Millisecond
		go func() {
			defer wg.Done()
			time.Sleep(delay)
			got[i], reused[i], errs[i] = batchedGenerate(t.Context(), m, b, prompts[i], gen)
		}()
	}
	wg.Wait()
	hits := 0
	for i := range seqs {
		if errs[i] != nil {
			t.Fatalf("sequence %d: %v", i, errs[i])
		}
		if !slices.Equal(got[i], solo[i]) {
			t.Errorf("sequence %d (%d prompt tokens, %d reused): batched %v, alone %v", i, len(prompts[i]), reused[i], got[i], solo[i])
		}
		if reused[i] > 0 {
			hits++
		}
	}
	if mixed == 0 || chunked == 0 {
		t.Errorf("%d steps mixed prompt chunks with decode steps and %d read a prompt in part; want both > 0", mixed, chunked)
	}
	if hits == 0 {
		t.Error("no sequence reused a cached prefix")
	}
	t.Logf("%d mixed steps, %d partial chunks, %d prefix hits", mixed, chunked, hits)
}

// TestPrefixCacheNeverServesAnotherSequence is a property test: prompts
// built from a few random prefixes cut at random lengths, random suffixes
// and earlier sequences extended (as a chat's next turn is), run four at
// a time under a prefix cache bound that holds only a few of them. After
// each prompt is read, the sequence's cache holds byte for byte the keys
// and values of its own tokens computed afresh, and its logits, then and
// after three more tokens, are those of a fresh run: eviction and reuse
// never serve another sequence's KV.
func TestPrefixCacheNeverServesAnotherSequence(t *testing.T) {
	m := openStories(t, 1)
	nv := int32(m.Config.NVocab)
	rng := rand.New(rand.NewPCG(7, 8))
	bases := make([][]int32, 5)
	for i := range bases {
		bases[i] = make([]int32, 300)
		for j := range bases[i] {
			bases[i][j] = rng.Int32N(nv)
		}
	}
	const limit = 600 << 10
	b := newBatcher(m.Shard, batchConfig{gather: stepGather, budget: DefaultStepBudget, chunk: 48, prefixBytes: limit}, nil)
	var (
		mu      sync.Mutex
		history [][]int32 // every sequence's tokens, prompt and steps
		hits    int
	)
	fresh := func(toks []int32) (*model.Cache, [][]float32) {
		c := m.Shard.NewCache(len(toks))
		var logits [][]float32
		for _, tok := range toks {
			r, err := m.Shard.Forward(c, model.Batch{Tokens: []int32{tok}})
			if err != nil {
				t.Error(err)
				return c, nil
			}
			logits = append(logits, slices.Clone(r.Logits))
		}
		return c, logits
	}
	same := func(a, b []float32) bool {
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return false
			}
		}
		return len(a) == len(b)
	}
	one := func(rng *rand.Rand) error {
		var prompt []int32
		mu.Lock()
		switch k := rng.IntN(3); {
		case k == 0 && len(history) > 0:
			prompt = slices.Clone(history[rng.IntN(len(history))])
		default:
			base := bases[rng.IntN(len(bases))]
			prompt = slices.Clone(base[:1+rng.IntN(len(base))])
		}
		mu.Unlock()
		for range 1 + rng.IntN(40) {
			prompt = append(prompt, rng.Int32N(nv))
		}
		steps := make([]int32, 3)
		for i := range steps {
			steps[i] = rng.Int32N(nv)
		}
		all := append(slices.Clone(prompt), steps...)
		wantCache, wantLogits := fresh(all)
		seq, err := b.prefill(context.Background(), prompt, len(all), nil)
		defer b.finish(seq)
		if err != nil {
			return err
		}
		if !model.SamePrefix(seq.cache, wantCache, len(prompt)) {
			return fmt.Errorf("a %d-token prompt (%d reused): its cache is not its own tokens' keys and values", len(prompt), seq.reused)
		}
		if !same(seq.logits, wantLogits[len(prompt)-1]) {
			return fmt.Errorf("a %d-token prompt (%d reused): the logits after it differ from a fresh run's", len(prompt), seq.reused)
		}
		for i, tok := range steps {
			logits, err := b.step(context.Background(), seq, tok)
			if err != nil {
				return err
			}
			if !same(logits, wantLogits[len(prompt)+i]) {
				return fmt.Errorf("a %d-token prompt (%d reused): step %d's logits differ from a fresh run's", len(prompt), seq.reused, i)
			}
		}
		mu.Lock()
		history = append(history, all)
		if seq.reused > 0 {
			hits++
		}
		mu.Unlock()
		return nil
	}
	for wave := range 12 {
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for g := range errs {
			wg.Add(1)
			r := rand.New(rand.NewPCG(uint64(wave), uint64(g)))
			go func() { defer wg.Done(); errs[g] = one(r) }()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("wave %d: %v", wave, err)
			}
		}
	}
	b.close()
	if b.store.size > limit {
		t.Errorf("the prefix cache holds %d bytes, over its bound %d", b.store.size, limit)
	}
	if hits == 0 || b.store.evictions == 0 {
		t.Errorf("%d prefix hits and %d evictions; the test means to exercise both", hits, b.store.evictions)
	}
	t.Logf("%d sequences, %d hits, %d evictions, %d entries (%d bytes) kept", len(history), hits, b.store.evictions, len(b.store.entries), b.store.size)
}

// TestPrefixHitSameTextAsMiss runs a two-turn exchange on two runner
// processes, one with the prefix cache and one without: the second turn
// (the first's prompt and answer, and more) is a cache hit on the first
// and a miss on the second, and both answer it with the same text.
func TestPrefixHitSameTextAsMiss(t *testing.T) {
	hit := loadedClient(t, proto.LoadSpec{})
	miss := loadedClient(t, proto.LoadSpec{}, "-prefix-cache-mb", "0")
	rng := rand.New(rand.NewPCG(9, 10))
	first := storyPrompt(rng, 300)
	var texts [2]string
	for i, c := range []*client.Client{hit, miss} {
		r1 := generateAll(t, c, "turn1", greedy(first, 32))
		second := first + r1.content + " " + storyPrompt(rng, 40)
		r2 := generateAll(t, c, "turn2", greedy(second, 48))
		u := r2.last.Usage
		if r2.last.Kind != "done" || u == nil || u.Timings == nil {
			t.Fatalf("runner %d turn 2 ended with %+v", i, r2.last)
		}
		if cached := u.CachedTokens; (i == 0) != (cached >= r1.last.Usage.PromptTokens-1) || (i == 1 && cached != 0) || u.Timings.CacheN != cached || u.Timings.PromptN != u.PromptTokens-cached {
			t.Fatalf("runner %d (prefix cache %v): turn 2 usage %+v, timings %+v", i, i == 0, u, u.Timings)
		}
		texts[i] = r2.content
		rng = rand.New(rand.NewPCG(9, 10)) // the same words for the other runner
		first = storyPrompt(rng, 300)
	}
	if texts[0] != texts[1] {
		t.Fatalf("a prefix cache hit answers %q, a miss %q", texts[0], texts[1])
	}
}
