package runner

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/skulk/skulk/internal/engine/model"
)

// TestLongPromptInterleaved: four greedy streams are decoding when a long
// prompt arrives (the serving benchmark's interference case). The prompt
// must be read in many small steps between theirs, not in chunk-sized
// ones that hold every stream for the whole chunk: the pacer starts a
// prompt beside running streams at one row and at most doubles it a step,
// so a 400-token prompt takes at least 9 steps where 256-token chunks
// take 2, and every stream advances in most of them. The streams' tokens
// and the prompt's logits are still bit for bit those of each alone.
func TestLongPromptInterleaved(t *testing.T) {
	m := openStories(t, 1)
	nv := int32(m.Config.NVocab)
	rng := rand.New(rand.NewPCG(11, 12))
	const streams, long, most = 4, 400, 300 // most: the streams' generation cap
	random := func(n int) []int32 {
		p := make([]int32, n)
		for i := range p {
			p[i] = rng.Int32N(nv)
		}
		return p
	}
	long0 := random(long)
	prompts := make([][]int32, streams)
	for i := range prompts {
		prompts[i] = random(8)
	}

	var (
		mu      sync.Mutex
		reading bool                   // the long prompt is being read
		chunks  []int                  // the long prompt's rows in each step that read some
		adv     = make([]int, streams) // steps each stream advanced in while it was read
	)
	b := newBatcher(m.Shard, batchConfig{gather: stepGather, budget: DefaultStepBudget, chunk: DefaultPrefillChunk}, nil)
	t.Cleanup(b.close)
	// While the long prompt is read, the streams' prompts are long read:
	// every prompt row of a step is the long prompt's.
	b.onStep = func(wants []want, rows []int) {
		mu.Lock()
		defer mu.Unlock()
		for i, w := range wants {
			if reading && rows[i] > 0 && !w.decode {
				chunks = append(chunks, rows[i])
			}
		}
	}

	type stream struct {
		toks []int32
		err  error
	}
	out := make([]stream, streams)
	ready := make(chan struct{}, streams)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			signalled := false
			defer func() {
				if !signalled { // failed early: the test must not wait for it
					ready <- struct{}{}
				}
			}()
			seq, err := b.prefill(t.Context(), prompts[k], len(prompts[k])+most, nil)
			defer b.finish(seq)
			if err != nil {
				out[k].err = err
				return
			}
			logits := seq.logits
			for n := 0; n < most; n++ {
				tok := argmax(logits)
				out[k].toks = append(out[k].toks, tok)
				if n == 3 {
					ready <- struct{}{}
					signalled = true
				}
				select {
				case <-stop:
					return
				default:
				}
				if logits, err = b.step(t.Context(), seq, tok); err != nil {
					out[k].err = err
					return
				}
				mu.Lock()
				if reading {
					adv[k]++
				}
				mu.Unlock()
			}
		}()
	}
	for range streams {
		<-ready
	}
	mu.Lock()
	reading = true
	mu.Unlock()
	seq, err := b.prefill(context.Background(), long0, long+1, nil)
	mu.Lock()
	reading = false
	mu.Unlock()
	var logits []float32
	reused := seq.reused
	if err == nil {
		logits = slices.Clone(seq.logits)
	}
	b.finish(seq)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}

	// Alone: each stream's greedy tokens and the long prompt's logits.
	for k := range streams {
		if out[k].err != nil {
			t.Fatalf("stream %d: %v", k, out[k].err)
		}
		want := soloGreedy(t, m.Shard, prompts[k], len(out[k].toks))
		if !slices.Equal(out[k].toks, want) {
			t.Errorf("stream %d: beside the long prompt %v, alone %v", k, out[k].toks, want)
		}
	}
	c := m.Shard.NewCache(long + 1)
	r, err := m.Shard.Forward(c, model.Batch{Tokens: long0})
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Logits {
		if math.Float32bits(r.Logits[i]) != math.Float32bits(logits[i]) {
			t.Fatalf("the long prompt's logits differ from its run alone at %d", i)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range chunks {
		total += n
	}
	t.Logf("the %d-token prompt read in %d steps %v; the streams advanced in %v of them", long, len(chunks), chunks, adv)
	if total != long-reused {
		t.Errorf("the steps read %d of the prompt's %d tokens (%d reused)", total, long, reused)
	}
	if len(chunks) < 9 || chunks[0] != 1 {
		t.Errorf("the prompt was read in %d steps %v; want at least 9, the first of 1 row (growth from 1 by at most doubling)", len(chunks), chunks)
	}
	for k, n := range adv {
		if n < len(chunks)/2 {
			t.Errorf("stream %d advanced in %d of the %d steps that read the prompt; want most", k, n, len(chunks))
		}
	}
}

// soloGreedy is n greedy tokens after prompt, one Forward a token, alone.
func soloGreedy(t *testing.T, s *model.Shard, prompt []int32, n int) []int32 {
	t.Helper()
	c := s.NewCache(len(prompt) + n)
	r, err := s.Forward(c, model.Batch{Tokens: prompt})
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	for range n {
		tok := argmax(r.Logits)
		out = append(out, tok)
		if r, err = s.Forward(c, model.Batch{Tokens: []int32{tok}}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
