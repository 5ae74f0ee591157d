package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

func newDevSynthCmd(s stdio) *cobra.Command {
	c := &cobra.Command{Use: "synth --out FILE", Short: "Write a random-weight GGUF model with a real shape",
		Example: "  skulk dev synth --shape tiny --type Q8_0 --out /tmp/tiny.gguf\n" +
			"  skulk dev synth --arch qwen3moe --out /tmp/moe.gguf   # a small MoE in the types its real files ship\n" +
			"  skulk dev synth --arch gpt-oss --out /tmp/oss.gguf    # MXFP4 experts, Q8_0 elsewhere\n" +
			"  skulk dev synth --arch phi3 --out /tmp/phi3.gguf      # fused projections, LongRoPE factors, Q4_K_M\n" +
			"  skulk dev synth --arch gemma3 --out /tmp/gemma3.gguf  # local and global blocks, post norms, GELU, Q4_K_M\n" +
			"  skulk dev synth --arch mistral3 --out /tmp/m3.gguf    # YaRN, query temperature, untied head, Q4_K_M\n" +
			"  skulk dev synth --arch llama4 --out /tmp/llama4.gguf  # no-rope and chunked blocks, shared expert, Q4_K_M", Args: noArgs}
	fs := c.Flags()
	shapes := synth.Shapes()
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	arch := fs.String("arch", "llama", "architecture: "+strings.Join(model.SupportedArchs(), ", "))
	shapeName := fs.String("shape", "tiny", "named shape: "+strings.Join(names, ", ")+
		" (default for a mixture-of-experts, phi3, gemma3 or mistral3 --arch: a small model of that architecture)")
	typName := fs.String("type", "Q8_0", "matrix type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4); norms stay F32 "+
		"(default for a mixture-of-experts, phi3, gemma3 or mistral3 --arch: the mix its real files ship)")
	out := fs.String("out", "", "GGUF file to write")
	seed := fs.Uint64("seed", 1, "seed of the random weights (the same flags give the same bytes)")
	// Overrides of the named shape, so tests can write a model small enough
	// to load in milliseconds.
	layers := fs.Int("layers", 0, "override: number of blocks")
	embd := fs.Int("embd", 0, "override: embedding width")
	heads := fs.Int("heads", 0, "override: attention heads")
	kvHeads := fs.Int("kv-heads", 0, "override: key/value heads")
	ff := fs.Int("ff", 0, "override: feed-forward width")
	vocab := fs.Int("vocab", 0, "override: vocabulary size (at least 259)")
	ctxLen := fs.Int("ctx", 0, "override: trained context length")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if !slices.Contains(model.SupportedArchs(), *arch) {
			return &exitError{code: 2, err: fmt.Errorf("--arch %q: supported are %s", *arch, strings.Join(model.SupportedArchs(), ", "))}
		}
		shape, ok := shapes[*shapeName]
		archShape, archDefault := synth.ArchShapes()[*arch]
		if archDefault && !fs.Changed("shape") {
			shape, ok = archShape, true
		}
		if !ok {
			return &exitError{code: 2, err: fmt.Errorf("--shape %q: known shapes are %s", *shapeName, strings.Join(names, ", "))}
		}
		if synth.IsMoE(*arch) != (shape.NExpert > 0) {
			return &exitError{code: 2, err: fmt.Errorf("--shape %q does not fit --arch %s: mixture-of-experts shapes go with the MoE architectures", *shapeName, *arch)}
		}
		typ, ok := tensor.ParseType(strings.ToUpper(*typName))
		if !ok || !typ.Supported() {
			return &exitError{code: 2, err: fmt.Errorf("--type %q is not a supported tensor type", *typName)}
		}
		mix := synth.Uniform(typ)
		if shipped, ok := synth.Shipped(*arch); ok && !fs.Changed("type") {
			mix = shipped
		}
		if *out == "" {
			return &exitError{code: 2, err: fmt.Errorf("--out is required")}
		}
		shape.Arch = *arch
		for _, o := range []struct {
			v   int
			dst *int
		}{{*layers, &shape.NLayer}, {*embd, &shape.NEmbd}, {*heads, &shape.NHead}, {*kvHeads, &shape.NHeadKV}, {*ff, &shape.NFF}, {*vocab, &shape.NVocab}, {*ctxLen, &shape.CtxLen}} {
			if o.v != 0 {
				*o.dst = o.v
			}
		}
		if *heads != 0 && *kvHeads == 0 && shape.NHeadKV > shape.NHead {
			shape.NHeadKV = shape.NHead
		}
		start := time.Now()
		if err := synth.WriteFileMix(*out, shape, mix, rand.New(rand.NewPCG(*seed, 0))); err != nil {
			return err
		}
		experts := ""
		if shape.NExpert > 0 {
			experts = fmt.Sprintf(", %d of %d experts", shape.NExpertUsed, shape.NExpert)
		}
		fmt.Fprintf(s.err, "wrote %s (%s %s, %d layers × %d wide%s, vocab %d) in %.1fs\n",
			*out, shape.Name, mix.Name, shape.NLayer, shape.NEmbd, experts, shape.NVocab, time.Since(start).Seconds())
		return nil
	}
	return c
}
