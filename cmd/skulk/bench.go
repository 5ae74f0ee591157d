package main

import (
	"encoding/json"
	"fmt"
	"github.com/skulk/skulk/internal/platform/config"
	"os"
	"runtime/pprof"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/bench"
	"github.com/skulk/skulk/internal/engine/model"
)

func newBenchCmd(s stdio) *cobra.Command {
	c := &cobra.Command{Use: "bench --model FILE", Short: "Measure prefill and decode speed of a GGUF model",
		Example: "  skulk bench --model MODEL.gguf\n  skulk bench --model MODEL.gguf --threads 4 --json", Args: noArgs}
	fs := c.Flags()
	modelPath := fs.String("model", "", "GGUF model file")
	threads := fs.Int("threads", 0, "worker threads (0 = physical cores)")
	pp := fs.Int("prompt-tokens", 512, "prefill test: tokens decoded as one batch")
	tg := fs.Int("gen-tokens", 128, "decode test: single-token steps")
	repeat := fs.Int("repeat", 5, "timed runs of each test, after one warm-up")
	asJSON := fs.Bool("json", false, "print one JSON object (the fields bench/llamabench.c prints)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed runs to this file (for go tool pprof)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if *modelPath == "" {
			return &exitError{code: 2, err: fmt.Errorf("--model is required")}
		}
		if *threads <= 0 {
			*threads = model.DefaultThreads()
		}
		ecfg, err := engineConfig()
		if err != nil {
			return err
		}
		m, err := engine.Open(*modelPath, engine.Options{Threads: *threads, Kernels: ecfg.Kernels, NoPack: ecfg.NoPack})
		if err != nil {
			return err
		}
		defer m.Close()
		if *cpuProfile != "" {
			stop, err := startCPUProfile(*cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
		}
		res, err := bench.Run(ctx, m.Shard, bench.Config{Vocab: m.Config.NVocab, PromptTokens: *pp, GenTokens: *tg, Repeat: *repeat})
		if err != nil {
			return err
		}
		res.Engine, res.Model, res.Threads = "skulk", *modelPath, *threads
		for _, t := range m.File.Tensors {
			res.WeightBytes += t.Size
		}
		if *asJSON {
			return json.NewEncoder(s.out).Encode(res)
		}
		unit := "threads"
		if res.Threads == 1 {
			unit = "thread"
		}
		fmt.Fprintf(s.out, "%s: %s weights, %d %s, %d timed runs after 1 warm-up\n",
			res.Model, config.FormatBytes(res.WeightBytes), res.Threads, unit, res.Repeat)
		tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "test\tmin t/s\tmedian t/s\tmax t/s\t")
		for _, r := range []struct {
			name string
			st   bench.Stats
		}{{fmt.Sprintf("pp%d", res.PromptTokens), res.Prefill}, {fmt.Sprintf("tg%d", res.GenTokens), res.Decode}} {
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t\n", r.name, r.st.Min, r.st.Median, r.st.Max)
		}
		return tw.Flush()
	}
	return c
}

// startCPUProfile starts writing a CPU profile to path; the returned stop
// ends it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
