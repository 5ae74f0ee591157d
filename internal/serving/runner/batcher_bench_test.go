package runner

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

var (
	benchWide    = flag.Bool("bench.wide", false, "benchmark serving on 2 blocks of the 1b shape's widths instead of the tiny shape")
	benchThreads = flag.Int("bench.threads", 2, "threads of the serving benchmarks' model")
)

// benchShard synthesizes a Q8_0 model (the tiny shape, or with
// -bench.wide two blocks of the 1b shape's widths) and loads it whole.
func benchShard(b *testing.B) *model.Shard {
	b.Helper()
	s := synth.Shapes()["tiny"]
	if *benchWide {
		s = synth.Shapes()["1b"]
		s.NLayer = 2
	}
	s.CtxLen = 4096
	path := filepath.Join(b.TempDir(), "bench.gguf")
	if err := synth.WriteFile(path, s, tensor.Q8_0, rand.New(rand.NewPCG(1, 2))); err != nil {
		b.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	sh, err := model.Load(f, model.Whole(s.NLayer), model.Options{Threads: *benchThreads})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sh.Close)
	return sh
}

func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

// benchStream reads a prompt of n random tokens and decodes greedily
// until stop is closed or gen tokens (0: no bound), calling tick after
// each token.
func benchStream(b *batcher, rng *rand.Rand, n, gen int, stop <-chan struct{}, tick func()) error {
	prompt := make([]int32, n)
	for i := range prompt {
		prompt[i] = rng.Int32N(int32(b.shard.Config.NVocab))
	}
	seq, err := b.prefill(context.Background(), prompt, 4000, nil)
	defer b.finish(seq)
	if err != nil {
		return err
	}
	logits := seq.logits
	for k := 0; gen == 0 || k < gen; k++ {
		select {
		case <-stop:
			return nil
		default:
		}
		if logits, err = b.step(context.Background(), seq, argmax(logits)); err != nil {
			return err
		}
		if tick != nil {
			tick()
		}
	}
	return nil
}

// BenchmarkServeStreams: aggregate decode tokens per second of 1, 4, 8 and
// 16 concurrent greedy streams through one batcher (each 16 prompt tokens,
// then 64 generated).
func BenchmarkServeStreams(b *testing.B) {
	sh := benchShard(b)
	for _, streams := range []int{1, 4, 8, 16} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			bt := newBatcher(sh, batchConfig{gather: stepGather, budget: DefaultStepBudget, chunk: DefaultPrefillChunk}, nil)
			defer bt.close()
			const gen = 64
			start := time.Now()
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				for s := range streams {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := benchStream(bt, rand.New(rand.NewPCG(uint64(i), uint64(s))), 16, gen, nil, nil); err != nil {
							b.Error(err)
						}
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(streams*gen*b.N)/time.Since(start).Seconds(), "tok/s")
		})
	}
}

// BenchmarkLongPromptITL: four streams decode while a 2048-token prompt
// arrives; the p99 of their inter-token gaps while it is read, against
// their p99 before it came, with the prompt read in 256- and 64-token
// chunks between their steps and read whole (the streams wait for it).
func BenchmarkLongPromptITL(b *testing.B) {
	sh := benchShard(b)
	for _, c := range []struct {
		name  string
		chunk int
	}{{"chunk=256", DefaultPrefillChunk}, {"chunk=64", 64}, {"whole", 0}} {
		b.Run(c.name, func(b *testing.B) {
			bt := newBatcher(sh, batchConfig{gather: stepGather, budget: DefaultStepBudget, chunk: c.chunk}, nil)
			defer bt.close()
			var (
				mu           sync.Mutex
				steady, busy []float64
				reading      bool
				readEnd      time.Time // when the last prompt was read
				promptTime   time.Duration
			)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for s := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					last := time.Now()
					tick := func() {
						now := time.Now()
						gap := float64(now.Sub(last).Microseconds()) / 1000
						mu.Lock()
						// A gap that overlapped a prompt's reading counts
						// as during it.
						overlapped := reading || last.Before(readEnd)
						last = now
						if overlapped {
							busy = append(busy, gap)
						} else {
							steady = append(steady, gap)
						}
						mu.Unlock()
					}
					if err := benchStream(bt, rand.New(rand.NewPCG(7, uint64(s))), 16, 0, stop, tick); err != nil {
						b.Error(err)
					}
				}()
			}
			time.Sleep(300 * time.Millisecond)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				mu.Lock()
				reading = true
				mu.Unlock()
				t0 := time.Now()
				if err := benchStream(bt, rand.New(rand.NewPCG(8, uint64(i))), 2048, 1, nil, nil); err != nil {
					b.Error(err)
				}
				promptTime += time.Since(t0)
				mu.Lock()
				reading, readEnd = false, time.Now()
				mu.Unlock()
				time.Sleep(200 * time.Millisecond)
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(p99(busy), "p99-ms-during-prompt")
			b.ReportMetric(p99(steady), "p99-ms-steady")
			b.ReportMetric(float64(promptTime.Milliseconds())/float64(b.N), "prompt-ms")
		})
	}
}

func p99(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	x = slices.Clone(x)
	slices.Sort(x)
	return x[min(len(x)-1, len(x)*99/100)]
}
