package model

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

var (
	benchFull    = flag.Bool("bench.1b", false, "also benchmark the whole 16-layer 1b shape (takes minutes to synthesize)")
	benchThreads = flag.Int("bench.threads", 2, "threads for the decode and prefill benchmarks")
)

// benchDir holds the synthesized benchmark models for the life of the test
// binary; TestMain removes it.
var benchDir struct {
	once  sync.Once
	path  string
	err   error
	mu    sync.Mutex
	files map[string]string
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if benchDir.path != "" {
		os.RemoveAll(benchDir.path)
	}
	os.Exit(code)
}

// benchModel synthesizes the model (once per test binary) and returns its
// path.
func benchModel(b *testing.B, s synth.Shape, typ tensor.Type) string {
	b.Helper()
	benchDir.once.Do(func() {
		benchDir.path, benchDir.err = os.MkdirTemp("", "skulk-model-bench-")
		benchDir.files = map[string]string{}
	})
	if benchDir.err != nil {
		b.Fatal(benchDir.err)
	}
	benchDir.mu.Lock()
	defer benchDir.mu.Unlock()
	key := fmt.Sprintf("%s-%d-%s", s.Name, s.NLayer, typ)
	if p, ok := benchDir.files[key]; ok {
		return p
	}
	w, err := synth.Build(s, typ, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(benchDir.path, key+".gguf")
	if err := w.WriteFile(p); err != nil {
		b.Fatal(err)
	}
	benchDir.files[key] = p
	return p
}

type benchCase struct {
	name  string
	shape synth.Shape
	typ   tensor.Type
}

// benchCases are the F32 tiny shape and 4-block models with the 1b shape's
// widths (and its 32000-token head), with -bench.1b the whole 1b shape.
func benchCases() []benchCase {
	shapes := synth.Shapes()
	small := shapes["1b"]
	small.Name, small.NLayer = "1b-4L", 4
	moe := shapes["moe-30b-a3b-mini"]
	moe.Name, moe.NLayer = "moe-2L", 2
	cs := []benchCase{
		{"tiny-f32", shapes["tiny"], tensor.F32},
		{"tiny-q8_0", shapes["tiny"], tensor.Q8_0},
		{"1b-4L-q8_0", small, tensor.Q8_0},
		{"1b-4L-q4_k", small, tensor.Q4_K},
		{"1b-4L-f16", small, tensor.F16},
		// Qwen3-30B-A3B-like experts (8 of 64 run): a decode step reads an
		// eighth of the expert weights.
		{"moe-2L-q8_0", moe, tensor.Q8_0},
		// gemma-3-1b's widths (4 heads of 256 over one KV head, a
		// GELU-gated FFN of 6912) with the 32000-token head: five local
		// blocks (a window of 512) and a global one.
		{"gemma3-1b-6L-q8_0", synth.Shape{Name: "gemma3-1b-6L", Arch: "gemma3", NEmbd: 1152, NLayer: 6, NHead: 4, NHeadKV: 1, HeadDim: 256,
			NFF: 6912, NVocab: 32000, RopeBase: 1e6, Tied: true, CtxLen: 32768, SlidingWindow: 512}, tensor.Q8_0},
	}
	if *benchFull {
		cs = append(cs, benchCase{"1b-q8_0", shapes["1b"], tensor.Q8_0})
	}
	return cs
}

func benchShard(b *testing.B, c benchCase) *Shard {
	b.Helper()
	path := benchModel(b, c.shape, c.typ)
	s, _ := openShard(b, path, whole, Options{Threads: *benchThreads})
	return s
}

// BenchmarkDecode measures single-token steps, as llama.cpp's tg128: the
// context runs from 0 to 128 positions and then starts over.
func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			s := benchShard(b, bc)
			const ctx = 128
			c := s.NewCache(ctx)
			tok := []int32{1}
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if c.Len() == ctx {
					c.Truncate(0)
				}
				if _, err := s.Forward(c, Batch{Tokens: tok}); err != nil {
					b.Fatal(err)
				}
				tok[0] = (tok[0]*7 + 3) % int32(s.Config.NVocab)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/token")
			b.ReportMetric((cpuTime()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/token")
		})
	}
}

// BenchmarkDecodeLongContext measures single-token steps at positions
// 2000..2047 (the earlier positions' keys and values are zeros, which cost
// the attention as much as any others), where attention is a large part of
// a step, with the default fp16 cache, an F32 one and the quantized ones
// side by side (these on the 1b shape: tiny's head_dim 48 is no whole
// number of their blocks).
func BenchmarkDecodeLongContext(b *testing.B) {
	for _, bc := range benchCases()[:3] {
		for _, kv := range []string{"f16", "f32", "q8_0", "q4_0"} {
			if (kv == "q8_0" || kv == "q4_0") && bc.shape.Name == "tiny" || kv == "f32" && bc.shape.Name != "tiny" {
				continue
			}
			b.Run(bc.name+"/kv="+kv, func(b *testing.B) {
				path := benchModel(b, bc.shape, bc.typ)
				s, _ := openShard(b, path, whole, Options{Threads: *benchThreads, CacheType: kv})
				const ctx, start = 2048, 2000
				c := s.NewCache(ctx)
				c.grow(ctx) // positions below start are held without being written
				c.len = start
				tok := []int32{1}
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					if c.Len() == ctx {
						c.len = start
					}
					if _, err := s.Forward(c, Batch{Tokens: tok}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
				b.ReportMetric((cpuTime()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/token")
			})
		}
	}
}

// BenchmarkPrefill measures a 512-token prompt as one batch, as llama.cpp's
// pp512.
func BenchmarkPrefill(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			s := benchShard(b, bc)
			const n = 512
			c := s.NewCache(n)
			rng := rand.New(rand.NewPCG(3, 4))
			prompt := make([]int32, n)
			for i := range prompt {
				prompt[i] = rng.Int32N(int32(s.Config.NVocab))
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				c.Truncate(0)
				if _, err := s.Forward(c, Batch{Tokens: prompt}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "tok/s")
			b.ReportMetric((cpuTime()-cpu0).Seconds()*1e3/float64(b.N*n), "cpu-ms/token")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system: on a
// shared machine a steadier measure of work than the wall clock (spinning
// workers count too).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// smallModel is a quick synthetic model with grouped-query attention.
func smallModel(t *testing.T, typ tensor.Type) string {
	return synthFile(t, synth.Shape{Name: "small", Arch: "llama", NEmbd: 128, NLayer: 2, NHead: 8, NHeadKV: 2,
		NFF: 256, NVocab: 300, RopeBase: 10000, CtxLen: 2048}, typ)
}

// smallMoE is a small qwen3moe model: 8 experts, 2 per token.
func smallMoE(t *testing.T, typ tensor.Type) string {
	return synthFile(t, synth.Shape{Name: "small-moe", Arch: "qwen3moe", NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, HeadDim: 64,
		NFF: 512, NVocab: 300, RopeBase: 1e6, CtxLen: 2048, NExpert: 8, NExpertUsed: 2, NFFExp: 256}, typ)
}

// smallCase is one small model the bit-identity tests run.
type smallCase struct {
	name string
	file func(*testing.T) string
}

// smallCases are the dense model in three types and the MoE one in two.
func smallCases() []smallCase {
	var cs []smallCase
	for _, typ := range []tensor.Type{tensor.F32, tensor.Q8_0, tensor.Q4_K} {
		cs = append(cs, smallCase{typ.String(), func(t *testing.T) string { return smallModel(t, typ) }})
	}
	for _, typ := range []tensor.Type{tensor.Q8_0, tensor.Q4_K} {
		cs = append(cs, smallCase{"qwen3moe-" + typ.String(), func(t *testing.T) string { return smallMoE(t, typ) }})
	}
	for _, arch := range []string{"glm4moe", "deepseek2"} {
		cs = append(cs, smallCase{arch + "-Q8_0", func(t *testing.T) string { return synthFile(t, synth.ArchShapes()[arch], tensor.Q8_0) }})
	}
	cs = append(cs, smallCase{"gpt-oss-MXFP4_MOE", smallGptOss})
	// No-rope and chunked blocks, input-weighted experts and a shared
	// one, with chunks and a temperature floor of 8 (smallLlama4).
	cs = append(cs, smallCase{"llama4-Q8_0", smallLlama4})
	return cs
}

// smallGptOss writes the gpt-oss model `skulk dev synth --arch gpt-oss`
// writes (MXFP4 experts) but with a window of 4 positions, so that short
// prompts cross it.
func smallGptOss(t *testing.T) string {
	t.Helper()
	shape := synth.ArchShapes()["gpt-oss"]
	shape.SlidingWindow = 4
	mix, _ := synth.Shipped("gpt-oss")
	w, err := synth.BuildMix(shape, mix, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "gpt-oss-w4.gguf")
	if err := w.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDecodeAllocs checks that a decode step allocates nothing once the
// cache has seen a batch, with the best kernels and with the generic ones
// (what a CPU without SIMD kernels runs).
func TestDecodeAllocs(t *testing.T) {
	for _, m := range smallCases() {
		for _, kc := range []string{tensor.CapNone, tensor.CapGeneric} {
			name := kc
			if kc == tensor.CapNone {
				name = "best"
			}
			t.Run(m.name+"/"+name, func(t *testing.T) {
				s, _ := openShard(t, m.file(t), whole, Options{Threads: 2, Kernels: kc})
				c := s.NewCache(256)
				if _, err := s.Forward(c, Batch{Tokens: []int32{1, 2, 3}}); err != nil {
					t.Fatal(err)
				}
				tok := []int32{5}
				allocs := testing.AllocsPerRun(100, func() {
					if _, err := s.Forward(c, Batch{Tokens: tok}); err != nil {
						t.Fatal(err)
					}
				})
				if allocs != 0 {
					t.Errorf("a decode step made %v allocations, want 0", allocs)
				}
			})
		}
	}
}

// TestBatchSplitBitIdentical checks that a position's logits do not depend
// on how the sequence was cut into batches (one batch past the ubatch size,
// several batches, single tokens) or on the thread count.
func TestBatchSplitBitIdentical(t *testing.T) {
	for _, m := range smallCases() {
		t.Run(m.name, func(t *testing.T) {
			path := m.file(t)
			n := ubatch + 37
			rng := rand.New(rand.NewPCG(5, 6))
			prompt := make([]int32, n)
			for i := range prompt {
				prompt[i] = rng.Int32N(300)
			}
			run := func(threads int, cuts []int) []float32 {
				s, _ := openShard(t, path, whole, Options{Threads: threads})
				c := s.NewCache(n)
				var out []float32
				for i, lo := range cuts {
					hi := n
					if i+1 < len(cuts) {
						hi = cuts[i+1]
					}
					r, err := s.Forward(c, Batch{Tokens: prompt[lo:hi], AllLogits: true})
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, r.Logits...)
				}
				return out
			}
			ref := run(2, []int{0})
			// Without AllLogits the last block finishes only the last
			// position; its logits must not change.
			s, _ := openShard(t, path, whole, Options{Threads: 2})
			r, err := s.Forward(s.NewCache(n), Batch{Tokens: prompt})
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range r.Logits {
				if want := ref[len(ref)-len(r.Logits)+i]; math.Float32bits(v) != math.Float32bits(want) {
					t.Fatalf("last position only: logit %d is %v, with all logits %v", i, v, want)
				}
			}
			singles := make([]int, 0, n)
			for i := 0; i < 40; i++ {
				singles = append(singles, i)
			}
			singles = append(singles, 40, 300, n-1)
			for _, tc := range []struct {
				threads int
				cuts    []int
			}{
				{1, []int{0}},
				{3, []int{0}},
				{2, []int{0, 1, 2, 130, 131, 515}},
				{2, singles},
			} {
				got := run(tc.threads, tc.cuts)
				for i := range ref {
					if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
						t.Fatalf("threads %d, %d batches: logit %d (position %d) is %v, one batch %v",
							tc.threads, len(tc.cuts), i, i/300, got[i], ref[i])
					}
				}
			}
		})
	}
}

// BenchmarkGeGLU measures gemma3's activation over one row of
// gemma-3-1b's FFN width, against SwiGLU's: ggml's fp16 GELU table costs a
// conversion and a lookup per element.
func BenchmarkGeGLU(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	gate, up := make([]float32, 6912), make([]float32, 6912)
	for i := range gate {
		gate[i], up[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	k, err := tensor.Capped("")
	if err != nil {
		b.Fatal(err)
	}
	w := make([]float32, len(gate))
	for _, c := range []struct {
		name string
		f    func(gate, up []float32)
	}{{"geglu", geglu}, {"swiglu", k.SwiGLU}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(8 * len(gate)))
			for b.Loop() {
				copy(w, gate)
				c.f(w, up)
			}
		})
	}
}
