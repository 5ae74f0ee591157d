package pipeline

import (
	"context"
	"flag"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

var (
	benchThreads = flag.Int("pipeline.threads", 1, "shard threads of each stage in BenchmarkDecode")
	benchBig     = flag.Bool("pipeline.big", false, "BenchmarkDecode also on 4 blocks of the 1b shape, Q8_0 (~330 MB to synthesize)")
	bench1b      = flag.Bool("pipeline.1b", false, "BenchmarkDecode also on the whole 1b shape, Q8_0 (~1.3 GB, minutes to synthesize)")
)

// benchModels are the models BenchmarkDecode runs: stories260K and the
// tiny shape by default, the 1b widths with flags.
func benchModels(b *testing.B) []struct{ name, path string } {
	ms := []struct{ name, path string }{
		{"stories260K", testFile(b, "models/stories260K.gguf")},
		{"tiny-q8_0", synthModel(b, synth.Shapes()["tiny"], tensor.Q8_0)},
	}
	if *benchBig {
		s := synth.Shapes()["1b"]
		s.Name, s.NLayer = "1b-4L", 4
		ms = append(ms, struct{ name, path string }{"1b-4L-q8_0", synthModel(b, s, tensor.Q8_0)})
	}
	if *bench1b {
		ms = append(ms, struct{ name, path string }{"1b-q8_0", synthModel(b, synth.Shapes()["1b"], tensor.Q8_0)})
	}
	return ms
}

// BenchmarkDecode measures the aggregate decode rate of 1, 4 and 8
// sequences generating at once, on the model in one stage and split into
// two (each stage on its own goroutine, with -pipeline.threads threads).
// One operation is a round: every sequence generates 32 tokens after a
// 4-token prompt. The two-stage runs report their rate over the one-stage
// run's as x1stage.
func BenchmarkDecode(b *testing.B) {
	const tokens = 32
	for _, m := range benchModels(b) {
		for _, seqs := range []int{1, 4, 8} {
			b.Run(fmt.Sprintf("%s/seqs=%d", m.name, seqs), func(b *testing.B) {
				var base float64
				for _, stages := range []int{1, 2} {
					b.Run(fmt.Sprintf("stages=%d", stages), func(b *testing.B) {
						rate, cpu, busy := benchRounds(b, m.path, stages, seqs, tokens)
						b.ReportMetric(rate, "tok/s")
						b.ReportMetric(cpu, "cpu-ms/token")
						b.ReportMetric(busy, "stages-busy")
						if stages == 1 {
							base = rate
						} else if base > 0 {
							b.ReportMetric(rate/base, "x1stage")
						}
					})
				}
			})
		}
	}
}

// benchRounds runs b.N rounds and returns the generated tokens per second,
// the process CPU milliseconds per token (on a busy machine the rate moves
// with the other load; the CPU time much less) and how many stages were
// computing on average (their summed busy time over the elapsed time: how
// well the stages overlap, whether or not the machine had a core for each).
func benchRounds(b *testing.B, path string, stages, seqs, tokens int) (rate, cpuMs, busy float64) {
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p, err := New(f, Split(nLayer(b, f), stages), Options{Threads: *benchThreads, Head: HeadConfig{Slots: seqs}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	prompts := randomPrompts(1, 256, 4, 4, 4, 4, 4, 4, 4, 4)
	qs := make([]*Sequence, seqs)
	n := 0
	var cpu0 time.Duration
	for b.Loop() {
		if n == 0 {
			cpu0 = cpuTime()
		}
		for i := range qs {
			if qs[i], err = p.Submit(ctx, Request{Prompt: prompts[i], MaxTokens: tokens}); err != nil {
				b.Fatal(err)
			}
		}
		for _, q := range qs {
			toks, err := q.All(ctx)
			if err != nil {
				b.Fatal(err)
			}
			n += len(toks)
		}
	}
	el := b.Elapsed()
	cpu := cpuTime() - cpu0
	st, err := p.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var sum time.Duration
	for _, s := range st {
		sum += s.Busy
	}
	return float64(n) / el.Seconds(), cpu.Seconds() * 1e3 / float64(n), sum.Seconds() / el.Seconds()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
