package encoder

import (
	"errors"
	"math"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// Bounds for an engine with the exact tanh GELU against a float64 textbook
// pass, from the reference README (the tiny model has synth-bert's weight
// scales, so the same bounds apply).
const (
	exactGELUEmbeddingBound = 5e-4
	exactGELUTokenBound     = 7.5e-3
)

func maxAbs64(got []float32, want []float64) float64 {
	var m float64
	for i, w := range want {
		m = max(m, math.Abs(float64(got[i])-w))
	}
	return m
}

func normalize64(v []float64) []float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / math.Sqrt(s)
	}
	return out
}

// TestTinyAgainstFloat64 runs random tiny models through Embed and a
// textbook float64 forward pass and compares tokens, pooled and normalised
// vectors, for both pooling types and with and without token types.
func TestTinyAgainstFloat64(t *testing.T) {
	inputs := [][]int32{{2, 3}, {2, 5, 6, 3}, {2, 8, 10, 7, 9, 8, 11, 12, 3}, {5}, slices.Repeat([]int32{13}, 16)}
	tests := []struct {
		name   string
		mutate func(*tiny)
		opt    Options
	}{
		{"mean", func(*tiny) {}, Options{Threads: 1}},
		{"mean_threads", func(s *tiny) { s.nEmbd, s.nFF, s.nPos = 64, 256, 16 }, Options{Threads: 4}},
		{"cls_metadata", func(s *tiny) { s.pooling = 2 }, Options{}},
		{"cls_option", func(*tiny) {}, Options{Pooling: PoolingCLS}},
		{"no_token_types_f32_embd", func(s *tiny) { s.noTypes, s.tokEmbdF16 = true, false }, Options{}},
		{"one_layer_eps", func(s *tiny) { s.nLayer, s.eps, s.seed = 1, 1e-5, 99 }, Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := defaultTiny()
			tt.mutate(&s)
			e, err := Open(s.write(t), tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			cls := e.Config().Pooling == PoolingCLS
			var worstTok, worstNorm float64
			for _, ids := range inputs {
				got, err := e.Embed(ids)
				if err != nil {
					t.Fatal(err)
				}
				want := s.reference64(ids)
				if len(got.Tokens) != len(ids) {
					t.Fatalf("%d token rows for %d ids", len(got.Tokens), len(ids))
				}
				pooled := make([]float64, s.nEmbd)
				for i, row := range want {
					worstTok = max(worstTok, maxAbs64(got.Tokens[i], row))
					for j, v := range row {
						pooled[j] += v / float64(len(ids))
					}
				}
				if cls {
					pooled = want[0]
					if !slices.Equal(got.Pooled, got.Tokens[0]) {
						t.Errorf("cls pooling: pooled is not the first token's output")
					}
				}
				worstNorm = max(worstNorm, maxAbs64(got.Normalized, normalize64(pooled)))
				var ss float64
				for _, v := range got.Normalized {
					ss += float64(v) * float64(v)
				}
				if math.Abs(ss-1) > 1e-5 {
					t.Errorf("|normalized|² = %v", ss)
				}
			}
			t.Logf("max |Δ| tokens %.3g, normalised %.3g", worstTok, worstNorm)
			if worstTok > exactGELUTokenBound || worstNorm > exactGELUEmbeddingBound {
				t.Errorf("max |Δ| tokens %.3g (bound %g), normalised %.3g (bound %g)", worstTok, exactGELUTokenBound, worstNorm, exactGELUEmbeddingBound)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	var unsupported *UnsupportedError
	tests := []struct {
		name   string
		mutate func(*tiny)
		opt    Options
		want   func(error) bool
	}{
		{"llama_arch", func(s *tiny) { s.arch = "llama" }, Options{}, func(err error) bool { return errors.As(err, &unsupported) && unsupported.What == "architecture" }},
		{"pooling_none", func(s *tiny) { s.pooling = 0 }, Options{}, func(err error) bool { return errors.As(err, &unsupported) && unsupported.What == "pooling type" }},
		{"pooling_missing", func(s *tiny) { s.pooling = -1 }, Options{}, func(err error) bool { return errors.As(err, &unsupported) }},
		{"pooling_rank", func(s *tiny) { s.pooling = 4 }, Options{}, func(err error) bool { return errors.As(err, &unsupported) }},
		{"pooling_option_last", func(*tiny) {}, Options{Pooling: 3}, func(err error) bool { return errors.As(err, &unsupported) }},
		{"gqa", func(s *tiny) { s.headCountKV = 2 }, Options{}, func(err error) bool { return errors.As(err, &unsupported) }},
		{"causal", func(s *tiny) { s.causal = true }, Options{}, func(err error) bool { return errors.As(err, &unsupported) && unsupported.What == "attention" }},
		{"no_block_count", func(s *tiny) { s.skip = map[string]bool{"bert.block_count": true} }, Options{}, isInvalid},
		{"no_eps", func(s *tiny) { s.skip = map[string]bool{"bert.attention.layer_norm_epsilon": true} }, Options{}, isInvalid},
		{"zero_eps", func(s *tiny) { s.eps = 0 }, Options{}, isInvalid},
		{"heads_not_dividing", func(s *tiny) { s.nHead = 5 }, Options{}, isInvalid},
		{"missing_bias", func(s *tiny) { s.skip = map[string]bool{"blk.1.ffn_up.bias": true} }, Options{}, isInvalid},
		{"missing_position_embd", func(s *tiny) { s.skip = map[string]bool{"position_embd.weight": true} }, Options{}, isInvalid},
		{"q_shape", func(s *tiny) { s.dims = map[string][]uint64{"blk.0.attn_q.weight": {32, 16}} }, Options{}, isInvalid},
		{"down_transposed", func(s *tiny) { s.dims = map[string][]uint64{"blk.0.ffn_down.weight": {32, 64}} }, Options{}, isInvalid},
		{"norm_shape", func(s *tiny) { s.dims = map[string][]uint64{"token_embd_norm.bias": {16}} }, Options{}, isInvalid},
		{"embd_3d", func(s *tiny) { s.dims = map[string][]uint64{"token_embd.weight": {32, 14, 1}} }, Options{}, isInvalid},
		{"vocab_too_big", func(s *tiny) { s.dims = map[string][]uint64{"token_embd.weight": {32, 10}} }, Options{}, isInvalid},
		{"no_tokenizer", func(s *tiny) { s.skip = map[string]bool{"tokenizer.ggml.tokens": true} }, Options{}, func(err error) bool { return err != nil && !isInvalid(err) }},
		{"negative_threads", func(*tiny) {}, Options{Threads: -1}, func(err error) bool { return err != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := defaultTiny()
			tt.mutate(&s)
			e, err := Open(s.write(t), tt.opt)
			if err == nil || !tt.want(err) {
				t.Fatalf("Open = %v, %v", e, err)
			}
			t.Log(err)
		})
	}
}

func isInvalid(err error) bool { return errors.Is(err, ErrInvalidModel) }

func TestEmbedInputErrors(t *testing.T) {
	s := defaultTiny()
	e, err := Open(s.write(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ids := range [][]int32{nil, {}, {2, -1, 3}, {2, int32(len(tinyVocab)), 3}, slices.Repeat([]int32{5}, s.nPos+1)} {
		_, err := e.Embed(ids)
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Errorf("Embed(%v) = %v, want *InputError", ids, err)
		}
	}
	if _, err := e.Embed(slices.Repeat([]int32{5}, s.nPos)); err != nil {
		t.Errorf("Embed of the longest input: %v", err)
	}
}

func TestTokenize(t *testing.T) {
	s := defaultTiny()
	e, err := Open(s.write(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.Tokenize("Hello worlds."), []int32{2, 5, 6, 7, 9, 3}; !slices.Equal(got, want) {
		t.Errorf("Tokenize = %v, want %v", got, want)
	}
}

// TestConcurrentEmbed checks that Embed calls from several goroutines give
// the same bits as one call alone.
func TestConcurrentEmbed(t *testing.T) {
	s := defaultTiny()
	s.nEmbd, s.nFF = 64, 256
	e, err := Open(s.write(t), Options{Threads: 3})
	if err != nil {
		t.Fatal(err)
	}
	ids := []int32{2, 8, 10, 7, 9, 8, 11, 12, 13, 5, 6, 3}
	want, err := e.Embed(ids)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			got, err := e.Embed(ids)
			if err != nil || !slices.Equal(got.Normalized, want.Normalized) || !slices.Equal(got.Tokens[len(ids)-1], want.Tokens[len(ids)-1]) {
				t.Errorf("concurrent Embed differs: %v", err)
			}
		})
	}
	wg.Wait()
}

// TestGELU checks the table GELU against the exact tanh GELU at every F16
// input, where two roundings separate them: the output's to F16 (half an F16
// ulp, relative 2^-11, or 2^-25 among subnormals) and, for negative inputs,
// the float32 cancellation in 1 + tanh (about |x|·2^-24), which ggml's
// float32 formula has too. It also checks the cut-offs.
func TestGELU(t *testing.T) {
	exact := func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*x*(1+0.044715*x*x)))
	}
	var x []float32
	for h := range 1 << 16 {
		v := tensor.F16ToF32(uint16(h))
		if v > -10 && v < 10 {
			x = append(x, v)
		}
	}
	y := slices.Clone(x)
	gelu(y)
	for i, v := range x {
		want := exact(float64(v))
		if d := math.Abs(float64(y[i]) - want); d > math.Abs(want)/1024+1.0/(1<<24)+math.Abs(float64(v))/(1<<23) {
			t.Fatalf("gelu(%v) = %v, exact %v", v, y[i], want)
		}
	}
	cut := []float32{-1e30, -10.5, -10, 10, 10.5, 3e38}
	got := slices.Clone(cut)
	gelu(got)
	if want := []float32{0, 0, 0, 10, 10.5, 3e38}; !slices.Equal(got, want) {
		t.Errorf("gelu(%v) = %v, want %v", cut, got, want)
	}
	// An input between F16 values is looked up at its F16 rounding.
	a, b := []float32{0.1}, []float32{tensor.F16ToF32(tensor.F32ToF16(0.1))}
	gelu(a)
	gelu(b)
	if a[0] != b[0] || a[0] == float32(exact(0.1)) {
		t.Errorf("gelu(0.1) = %v, gelu(f16(0.1)) = %v, exact %v", a[0], b[0], exact(0.1))
	}
	nan := []float32{float32(math.NaN())}
	gelu(nan)
	if !math.IsNaN(float64(nan[0])) {
		t.Errorf("gelu(NaN) = %v", nan[0])
	}
}

// TestDeps enforces the engine dependency rule: engine packages import only
// engine packages, the standard library and golang.org/x/sys.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/skulk/skulk/internal/engine/") && !strings.HasPrefix(p, "golang.org/x/sys/") {
			t.Errorf("forbidden dependency %s", p)
		}
	}
}
