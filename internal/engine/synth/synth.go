// Package synth writes GGUF models with real shapes and random weights, for
// tests and benchmarks: llama-architecture files that both this engine and
// llama.cpp load, with a full SentencePiece-style vocabulary.
package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// Shape is a model's architecture and size.
type Shape struct {
	Name     string
	Arch     string // llama, qwen2 or qwen3
	NEmbd    int
	NLayer   int
	NHead    int
	NHeadKV  int
	HeadDim  int // 0 = NEmbd/NHead
	NFF      int
	NVocab   int
	RopeBase float32
	Tied     bool
	CtxLen   int
}

// Shapes are the named shapes `skulk dev synth` knows; tiny, 1b and 3b are the
// ones reference/PERF.md measured llama.cpp on.
func Shapes() map[string]Shape {
	return map[string]Shape{
		"tiny": {Name: "tiny", Arch: "llama", NEmbd: 288, NLayer: 6, NHead: 6, NHeadKV: 6, NFF: 768, NVocab: 32000, RopeBase: 10000, Tied: true, CtxLen: 2048},
		"1b":   {Name: "1b", Arch: "llama", NEmbd: 2048, NLayer: 16, NHead: 32, NHeadKV: 8, NFF: 8192, NVocab: 32000, RopeBase: 500000, Tied: true, CtxLen: 8192},
		"3b":   {Name: "3b", Arch: "llama", NEmbd: 3072, NLayer: 28, NHead: 24, NHeadKV: 8, NFF: 8192, NVocab: 32000, RopeBase: 500000, Tied: true, CtxLen: 8192},
	}
}

// Fallback is the type used for a tensor whose rows are not whole blocks of
// the requested type, as llama.cpp's quantizer does.
func Fallback(t tensor.Type, cols int) tensor.Type {
	if cols%t.BlockElems() == 0 {
		return t
	}
	switch t {
	case tensor.Q4_K:
		t = tensor.Q5_0
	case tensor.Q5_K:
		t = tensor.Q5_1
	case tensor.Q6_K:
		t = tensor.Q8_0
	}
	if cols%t.BlockElems() == 0 {
		return t
	}
	return tensor.F16
}

// Build returns a writer holding a model of the given shape whose matrices are
// stored as typ (norms stay F32), with weights drawn from rng.
func Build(s Shape, typ tensor.Type, rng *rand.Rand) (*gguf.Writer, error) {
	if s.HeadDim == 0 {
		s.HeadDim = s.NEmbd / s.NHead
	}
	if s.NHeadKV == 0 {
		s.NHeadKV = s.NHead
	}
	if s.NHead%s.NHeadKV != 0 || s.HeadDim%2 != 0 {
		return nil, fmt.Errorf("synth: %d heads / %d KV heads / head dim %d is not a valid shape", s.NHead, s.NHeadKV, s.HeadDim)
	}
	if s.NVocab < 259 {
		return nil, fmt.Errorf("synth: vocabulary of %d is smaller than the 259 special and byte tokens", s.NVocab)
	}
	w := gguf.NewWriter()
	a := s.Arch
	w.Set("general.architecture", a)
	w.Set("general.name", "skulk-synth-"+s.Name)
	w.Set("general.file_type", uint32(fileType(typ)))
	w.Set(a+".block_count", uint32(s.NLayer))
	w.Set(a+".context_length", uint32(s.CtxLen))
	w.Set(a+".embedding_length", uint32(s.NEmbd))
	w.Set(a+".feed_forward_length", uint32(s.NFF))
	w.Set(a+".attention.head_count", uint32(s.NHead))
	w.Set(a+".attention.head_count_kv", uint32(s.NHeadKV))
	w.Set(a+".attention.key_length", uint32(s.HeadDim))
	w.Set(a+".attention.value_length", uint32(s.HeadDim))
	w.Set(a+".rope.dimension_count", uint32(s.HeadDim))
	w.Set(a+".rope.freq_base", s.RopeBase)
	w.Set(a+".attention.layer_norm_rms_epsilon", float32(1e-5))
	w.Set(a+".vocab_size", uint32(s.NVocab))
	addVocab(w, s.NVocab)

	var err error
	mat := func(name string, rows, cols int) {
		if err != nil {
			return
		}
		t := Fallback(typ, cols)
		x := randn(rng, rows*cols, float32(1/math.Sqrt(float64(cols))))
		var data []byte
		if data, err = tensor.Quantize(t, x); err != nil {
			err = fmt.Errorf("synth: %s: %w", name, err)
			return
		}
		w.AddTensor(name, t, []uint64{uint64(cols), uint64(rows)}, data)
	}
	norm := func(name string, n int) {
		x := randn(rng, n, 0.1)
		for i := range x {
			x[i] += 1
		}
		d, _ := tensor.Quantize(tensor.F32, x)
		w.AddTensor(name, tensor.F32, []uint64{uint64(n)}, d)
	}
	qd, kvd := s.NHead*s.HeadDim, s.NHeadKV*s.HeadDim
	mat("token_embd.weight", s.NVocab, s.NEmbd)
	for l := 0; l < s.NLayer; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		norm(p+"attn_norm.weight", s.NEmbd)
		mat(p+"attn_q.weight", qd, s.NEmbd)
		mat(p+"attn_k.weight", kvd, s.NEmbd)
		mat(p+"attn_v.weight", kvd, s.NEmbd)
		mat(p+"attn_output.weight", s.NEmbd, qd)
		if s.Arch == "qwen3" {
			norm(p+"attn_q_norm.weight", s.HeadDim)
			norm(p+"attn_k_norm.weight", s.HeadDim)
		}
		norm(p+"ffn_norm.weight", s.NEmbd)
		mat(p+"ffn_gate.weight", s.NFF, s.NEmbd)
		mat(p+"ffn_up.weight", s.NFF, s.NEmbd)
		mat(p+"ffn_down.weight", s.NEmbd, s.NFF)
	}
	norm("output_norm.weight", s.NEmbd)
	if !s.Tied {
		mat("output.weight", s.NVocab, s.NEmbd)
	}
	return w, err
}

func randn(rng *rand.Rand, n int, std float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * std
	}
	return x
}

// fileType maps a tensor type to llama.cpp's general.file_type (LLAMA_FTYPE).
func fileType(t tensor.Type) int {
	m := map[tensor.Type]int{tensor.F32: 0, tensor.F16: 1, tensor.Q4_0: 2, tensor.Q4_1: 3, tensor.Q8_0: 7,
		tensor.Q5_0: 8, tensor.Q5_1: 9, tensor.Q4_K: 15, tensor.Q5_K: 17, tensor.Q6_K: 18, tensor.BF16: 32}
	return m[t]
}

// addVocab writes a SentencePiece ("llama") vocabulary of n tokens: <unk>,
// <s>, </s>, the 256 byte-fallback tokens, then distinct pieces with
// descending scores, so any text encodes and llama.cpp accepts the file.
func addVocab(w *gguf.Writer, n int) {
	toks := make([]string, 0, n)
	types := make([]int32, 0, n)
	toks = append(toks, "<unk>", "<s>", "</s>")
	types = append(types, 2, 3, 3)
	for b := 0; b < 256; b++ {
		toks = append(toks, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	seen := map[string]bool{}
	for _, t := range toks {
		seen[t] = true
	}
	letters := "etaoinshrdlcumwfgypbvkjxqz"
	var pieces []string
	add := func(p string) {
		if !seen[p] && len(toks)+len(pieces) < n {
			seen[p] = true
			pieces = append(pieces, p)
		}
	}
	add("▁")
	for _, c := range letters {
		add(string(c))
		add("▁" + string(c))
	}
	for len(toks)+len(pieces) < n {
		before := len(pieces)
		for _, p := range append([]string(nil), pieces...) {
			for _, c := range letters {
				add(p + string(c))
			}
			if len(toks)+len(pieces) >= n {
				break
			}
		}
		if len(pieces) == before {
			break
		}
	}
	sort.SliceStable(pieces, func(i, j int) bool { return len([]rune(pieces[i])) < len([]rune(pieces[j])) })
	scores := make([]float32, 0, n)
	for range toks {
		scores = append(scores, 0)
	}
	for i, p := range pieces {
		toks = append(toks, p)
		types = append(types, 1)
		scores = append(scores, -float32(i))
	}
	w.Set("tokenizer.ggml.model", "llama")
	w.Set("tokenizer.ggml.tokens", toks)
	w.Set("tokenizer.ggml.scores", scores)
	w.Set("tokenizer.ggml.token_type", types)
	w.Set("tokenizer.ggml.bos_token_id", uint32(1))
	w.Set("tokenizer.ggml.eos_token_id", uint32(2))
	w.Set("tokenizer.ggml.unknown_token_id", uint32(0))
	w.Set("tokenizer.ggml.add_bos_token", true)
	w.Set("tokenizer.ggml.add_eos_token", false)
}
