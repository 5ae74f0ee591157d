// Package synth writes GGUF models with real shapes and random weights, for
// tests and benchmarks: llama-architecture files that both this engine and
// llama.cpp load, with a full SentencePiece-style vocabulary.
//
// Each chunk of a tensor's rows is drawn from its own generator, seeded from
// the caller's rng, so generation uses every CPU while the bytes depend only
// on the shape, type and seed. Build and WriteFile may be called
// concurrently; each call owns the goroutines it starts and waits for them.
package synth

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

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
	// Mixture of experts (qwen3moe): NExpert experts of width NFFExp, of
	// which NExpertUsed run per token; NFF is then only the header's dense
	// width.
	NExpert, NExpertUsed, NFFExp int
	// glm4moe: NShared shared experts, LeadingDense first blocks with a
	// dense FFN, NextN multi-token-prediction blocks after the trunk
	// (counted in block_count, not in NLayer), RopeDim rotated dimensions
	// per head (0 = HeadDim).
	NShared, LeadingDense, NextN, RopeDim int
	// deepseek2's latent attention: query and key/value latent ranks,
	// the per-head key (unrotated + RopeDim rotated) and value widths;
	// grouped expert selection.
	QLoraRank, KVLoraRank, KeyLenMLA, ValueLenMLA int
	NGroup, NGroupUsed                            int
	// YaRN rotary scaling (DeepSeek V3's): the factor, the original
	// context and the file's yarn_log_multiplier; 0 = none.
	YarnFactor  float32
	YarnOrigCtx int
	YarnLogMul  float32
	// YaRN's correction range as a file names it (mistral3's converter
	// writes beta_fast and beta_slow); 0 = not written.
	YarnBetaFast, YarnBetaSlow float32
	// AttnTempScale != 0: attention.temperature_scale, Llama 4's query
	// temperature (mistral3's Ministral 3 files: 0.1), whose floor is
	// YarnOrigCtx.
	AttnTempScale float32
	// gpt-oss: every other block (the even ones) attends to the last
	// SlidingWindow positions; phi3: every block does; gemma3: five
	// blocks of every six (llama.cpp's default pattern).
	SlidingWindow int
	// RopeLinear > 0: linear rope scaling by that factor, as Gemma 3's
	// 4B and larger files set it (its global blocks take it).
	RopeLinear float32
	// SoftCap > 0: final_logit_softcapping (gemma2's files set 30).
	SoftCap float32
	// phi3's LongRoPE: the original (pre-training) context, which the
	// short factors serve and past which the long ones apply, with the
	// attention factor the converter derives from CtxLen/LongRopeOrigCtx;
	// 0 = no factor tensors.
	LongRopeOrigCtx int
	// llama4: every MoEStep-th block (b+1)%MoEStep == 0 routes through
	// the experts and a shared expert of their width; the others are
	// dense blocks of NFF (interleave_moe_layer_step).
	MoEStep int
}

// Shapes are the named shapes `skulk dev synth` knows; tiny, 1b and 3b are the
// ones testdata/reference/PERF.md measured llama.cpp on.
func Shapes() map[string]Shape {
	return map[string]Shape{
		"tiny": {Name: "tiny", Arch: "llama", NEmbd: 288, NLayer: 6, NHead: 6, NHeadKV: 6, NFF: 768, NVocab: 32000, RopeBase: 10000, Tied: true, CtxLen: 2048},
		"1b":   {Name: "1b", Arch: "llama", NEmbd: 2048, NLayer: 16, NHead: 32, NHeadKV: 8, NFF: 8192, NVocab: 32000, RopeBase: 500000, Tied: true, CtxLen: 8192},
		"3b":   {Name: "3b", Arch: "llama", NEmbd: 3072, NLayer: 28, NHead: 24, NHeadKV: 8, NFF: 8192, NVocab: 32000, RopeBase: 500000, Tied: true, CtxLen: 8192},
		// A Qwen3-30B-A3B-like mixture (48 layers, 128 experts of which 8
		// run, head_dim 128) scaled down in width and expert count so that
		// it fits and runs here: about 3.3 GB in Q4_K_M.
		"moe-30b-a3b-mini": {Name: "moe-30b-a3b-mini", Arch: "qwen3moe", NEmbd: 1024, NLayer: 48, NHead: 16, NHeadKV: 4, HeadDim: 128,
			NFF: 3072, NVocab: 32000, RopeBase: 1e6, CtxLen: 8192, NExpert: 64, NExpertUsed: 8, NFFExp: 512},
		// A gpt-oss-20b-like mixture (24 layers, 32 experts of which 4
		// run, 8 query heads per KV head of 64, a 128-position window on
		// every other block, YaRN ×32) scaled down in width so that it
		// fits and runs here: about 1.4 GB in MXFP4_MOE.
		"gpt-oss-20b-mini": {Name: "gpt-oss-20b-mini", Arch: "gpt-oss", NEmbd: 1024, NLayer: 24, NHead: 16, NHeadKV: 2, HeadDim: 64,
			NFF: 1024, NVocab: 32000, RopeBase: 150000, CtxLen: 131072, NExpert: 32, NExpertUsed: 4, NFFExp: 1024,
			YarnFactor: 32, YarnOrigCtx: 4096, SlidingWindow: 128},
	}
}

// ArchShapes are the small models `skulk dev synth --arch A` writes when no
// shape is named: a few MB each, hidden sizes of 256 so K-quants apply, with
// the features of the architecture.
func ArchShapes() map[string]Shape {
	return map[string]Shape{
		"qwen3moe": {Name: "qwen3moe-tiny", Arch: "qwen3moe", NEmbd: 256, NLayer: 3, NHead: 4, NHeadKV: 2, HeadDim: 64,
			NFF: 768, NVocab: 1024, RopeBase: 1e6, CtxLen: 512, NExpert: 8, NExpertUsed: 2, NFFExp: 256},
		// GLM-4.5's layout: a leading dense block, then blocks of 8 routed
		// experts (2 per token, sigmoid gating with a selection bias) plus
		// a shared one; q/k/v biases, q/k norms, half the head rotated; one
		// next-token-prediction block after the trunk.
		"glm4moe": {Name: "glm4moe-tiny", Arch: "glm4moe", NEmbd: 256, NLayer: 3, NHead: 4, NHeadKV: 2, HeadDim: 64,
			NFF: 512, NVocab: 1024, RopeBase: 1e6, CtxLen: 512, NExpert: 8, NExpertUsed: 2, NFFExp: 256,
			NShared: 1, LeadingDense: 1, NextN: 1, RopeDim: 32},
		// DeepSeek V3's layout: latent attention (a query latent, a shared
		// key/value latent, per-head absorbed key and expanded value), a
		// leading dense block, sigmoid routing with a selection bias over
		// groups of experts, a shared expert, one next-token-prediction
		// block.
		"deepseek2": {Name: "deepseek2-tiny", Arch: "deepseek2", NEmbd: 256, NLayer: 3, NHead: 4, NHeadKV: 1, HeadDim: 320,
			NFF: 512, NVocab: 1024, RopeBase: 10000, CtxLen: 512, NExpert: 8, NExpertUsed: 2, NFFExp: 256,
			NShared: 1, LeadingDense: 1, NextN: 1, RopeDim: 64,
			QLoraRank: 256, KVLoraRank: 256, KeyLenMLA: 128, ValueLenMLA: 64, NGroup: 4, NGroupUsed: 2,
			YarnFactor: 40, YarnOrigCtx: 128, YarnLogMul: 0.1},
		// gpt-oss's layout (gpt-oss-20b: 24 blocks, 32 experts of which
		// 4 run, 64 heads / 8 KV heads of 64): q/k/v/output biases,
		// attention sinks, sliding-window blocks alternating with full
		// ones (a window of 16 so the reference prompts cross it), YaRN
		// (factor 32 as shipped), router and expert biases.
		"gpt-oss": {Name: "gpt-oss-tiny", Arch: "gpt-oss", NEmbd: 256, NLayer: 4, NHead: 4, NHeadKV: 2, HeadDim: 64,
			NFF: 256, NVocab: 1024, RopeBase: 150000, CtxLen: 4096, NExpert: 8, NExpertUsed: 4, NFFExp: 256,
			YarnFactor: 32, YarnOrigCtx: 128, SlidingWindow: 16},
		// Phi-3-mini-128k's layout (Phi-4's is the same with grouped
		// KV heads): fused q/k/v and gate/up projections, an untied
		// head, NeoX rope with LongRoPE factors. The original context
		// is 256, so a cache of 256 positions takes the short factors
		// and one of 512 the long ones (llama.cpp's n_ctx, which it
		// rounds up to a multiple of 256). The name has no "phi3" or
		// "phi-3": llama.cpp would then look up Phi-3's special
		// tokens (<|endoftext|>) in the vocabulary, which synth's has not.
		"phi3": {Name: "phi-tiny", Arch: "phi3", NEmbd: 256, NLayer: 3, NHead: 4, NHeadKV: 2, HeadDim: 64,
			NFF: 512, NVocab: 1024, RopeBase: 10000, CtxLen: 4096, LongRopeOrigCtx: 256},
		// Gemma 3's layout (gemma-3-1b: 26 blocks, 4 heads of 256 over
		// one KV head, wider than the 1152 embedding; the 4B and
		// larger: linear rope scaling ×8): q/k norms, norms after
		// attention and FFN, GELU-gated FFN, tied head. Eight blocks
		// with llama.cpp's default pattern, so blocks 0–4 and 6–7 are
		// local, with a window of 8 that the 33-token reference prompt
		// crosses, and block 5 global (base 1e6, scaled; the local
		// ones take 10000 unscaled).
		"gemma3": {Name: "gemma3-tiny", Arch: "gemma3", NEmbd: 256, NLayer: 8, NHead: 4, NHeadKV: 1, HeadDim: 128,
			NFF: 768, NVocab: 1024, RopeBase: 1e6, Tied: true, CtxLen: 32768, SlidingWindow: 8, RopeLinear: 8},
		// Ministral 3's layout (Ministral-3-8B: 34 blocks, 32 heads of
		// 128 over 8 KV heads, wider than the 4096 embedding; rope base
		// 1e6 with YaRN ×16 from an original context of 16384, betas 32
		// and 1, log multiplier 1; query temperature 0.1): llama's
		// blocks, an untied head. The original context is 16 here, so
		// the 33-token reference prompt and its steps cross the
		// temperature's floor three times (factors 1, 1+0.1·ln 2, …)
		// and YaRN's ramp spans the first pairs.
		"mistral3": {Name: "mistral3-tiny", Arch: "mistral3", NEmbd: 256, NLayer: 4, NHead: 4, NHeadKV: 2, HeadDim: 128,
			NFF: 768, NVocab: 1024, RopeBase: 1e6, CtxLen: 4096,
			YarnFactor: 16, YarnOrigCtx: 16, YarnLogMul: 1, YarnBetaFast: 32, YarnBetaSlow: 1, AttnTempScale: 0.1},
		// Llama 4's layout (Maverick's alternation of dense and expert
		// blocks, interleave_moe_layer_step 2; Scout's 16 experts have
		// it 1): expert blocks of 8 routed experts (2 per token, chosen
		// by their logits, their inputs weighted by the sigmoid) plus a
		// shared one, an untied head, normal (not NeoX) rope. Five
		// blocks, so that llama.cpp's hard-wired schedule shows: blocks
		// 0–2 and 4 roped, with q/k norms, attending within chunks;
		// block 3 without rope, attending to everything, its queries
		// scaled by the attention temperature. llama.cpp fixes the chunk
		// and the temperature's floor at 8192 positions whatever the
		// file says (the converter writes neither), so the context is
		// long enough for a reference prompt to cross them.
		"llama4": {Name: "llama4-tiny", Arch: "llama4", NEmbd: 256, NLayer: 5, NHead: 4, NHeadKV: 2, HeadDim: 64,
			NFF: 512, NVocab: 1024, RopeBase: 500000, CtxLen: 16384, NExpert: 8, NExpertUsed: 2, NFFExp: 256, MoEStep: 2},
	}
}

// Fallback is the type used for a tensor whose rows are not whole blocks of
// the requested type, as llama.cpp's quantizer does.
func Fallback(t tensor.Type, cols int) tensor.Type {
	if cols%t.BlockElems() == 0 {
		return t
	}
	switch t {
	case tensor.Q2_K, tensor.Q3_K:
		t = tensor.Q4_0
	case tensor.IQ4_XS:
		t = tensor.IQ4_NL
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
// stored as typ (norms stay F32), with weights drawn from rng. The writer holds
// every tensor's bytes; WriteFile streams them instead.
func Build(s Shape, typ tensor.Type, rng *rand.Rand) (*gguf.Writer, error) {
	return BuildMix(s, Uniform(typ), rng)
}

// BuildMix is Build with each matrix's type chosen by mix.
func BuildMix(s Shape, mix Mix, rng *rand.Rand) (*gguf.Writer, error) {
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	w := header(s, mix.FileType)
	for _, t := range plan(s, mix, rng) {
		data, err := t.data()
		if err != nil {
			return nil, err
		}
		w.AddTensor(t.name, t.typ, t.dims(), data)
	}
	return w, nil
}

// WriteFile writes the same file as Build(s, typ, rng).WriteFile(path), but
// generates and writes one tensor at a time, so a billion-parameter model
// needs the memory of its largest tensor rather than of the whole file.
func WriteFile(path string, s Shape, typ tensor.Type, rng *rand.Rand) error {
	return WriteFileMix(path, s, Uniform(typ), rng)
}

// WriteFileMix is WriteFile with each matrix's type chosen by mix.
func WriteFileMix(path string, s Shape, mix Mix, rng *rand.Rand) (err error) {
	s, err = s.normalize()
	if err != nil {
		return err
	}
	ts := plan(s, mix, rng)
	// The header (metadata and tensor infos) does not depend on the tensors'
	// values, so gguf.Writer can write it from tensors that all alias one
	// zeroed buffer; its data section is then replaced by the real bytes.
	// gguf.Writer lays the data out as each tensor followed by padding to the
	// alignment, which is what the loop below reproduces.
	w := header(s, mix.FileType)
	var maxSize, dataLen int64
	for _, t := range ts {
		maxSize = max(maxSize, t.size)
		dataLen += alignUp(t.size, gguf.DefaultAlignment)
	}
	zero := make([]byte, maxSize)
	for _, t := range ts {
		w.AddTensor(t.name, t.typ, t.dims(), zero[:t.size])
	}
	total, err := w.WriteTo(io.Discard)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".synth-*.gguf")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	out := bufio.NewWriterSize(tmp, 1<<20)
	if _, err := w.WriteTo(&prefixWriter{w: out, n: total - dataLen}); err != nil {
		return err
	}
	pad := make([]byte, gguf.DefaultAlignment)
	for _, t := range ts {
		data, err := t.data()
		if err != nil {
			return err
		}
		if _, err := out.Write(data); err != nil {
			return err
		}
		if _, err := out.Write(pad[:alignUp(t.size, gguf.DefaultAlignment)-t.size]); err != nil {
			return err
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	st, err := tmp.Stat()
	if err != nil {
		return err
	}
	if st.Size() != total {
		return fmt.Errorf("synth: wrote %d bytes, the header promised %d", st.Size(), total)
	}
	// CreateTemp makes the file private; a model is an ordinary output file.
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// prefixWriter passes on the first n bytes written to it and drops the rest.
type prefixWriter struct {
	w io.Writer
	n int64
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	keep := b[:min(int64(len(b)), max(p.n, 0))]
	p.n -= int64(len(keep))
	if len(keep) > 0 {
		if _, err := p.w.Write(keep); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

func alignUp(x, a int64) int64 { return (x + a - 1) / a * a }

// normalize fills defaulted fields and rejects shapes no engine can run.
func (s Shape) normalize() (Shape, error) {
	if s.NHead <= 0 || s.NEmbd <= 0 || s.NLayer <= 0 || s.NFF <= 0 {
		return s, fmt.Errorf("synth: shape %q needs positive embedding, layer, head and feed-forward sizes", s.Name)
	}
	if s.HeadDim == 0 {
		s.HeadDim = s.NEmbd / s.NHead
	}
	if s.RopeDim == 0 {
		s.RopeDim = s.HeadDim
	}
	if s.RopeDim > s.HeadDim || s.RopeDim%2 != 0 {
		return s, fmt.Errorf("synth: rope dimension %d does not fit head dimension %d", s.RopeDim, s.HeadDim)
	}
	if s.Arch != "glm4moe" && s.Arch != "deepseek2" && (s.NShared > 0 || s.LeadingDense > 0 || s.NextN > 0) {
		return s, fmt.Errorf("synth: shared experts, leading dense blocks and next-token-prediction blocks are glm4moe's and deepseek2's")
	}
	if s.Arch == "deepseek2" {
		if s.KVLoraRank <= 0 || s.KeyLenMLA <= s.RopeDim || s.ValueLenMLA <= 0 || s.NHeadKV != 1 || s.HeadDim != s.KVLoraRank+s.RopeDim {
			return s, fmt.Errorf("synth: deepseek2 needs a key/value latent, key and value widths, one KV head of latent+rope width")
		}
	}
	if s.NHeadKV == 0 {
		s.NHeadKV = s.NHead
	}
	if s.NHead%s.NHeadKV != 0 || s.HeadDim%2 != 0 {
		return s, fmt.Errorf("synth: %d heads / %d KV heads / head dim %d is not a valid shape", s.NHead, s.NHeadKV, s.HeadDim)
	}
	if s.NExpert > 0 && (s.NExpertUsed <= 0 || s.NExpertUsed > s.NExpert || s.NFFExp <= 0) {
		return s, fmt.Errorf("synth: %d of %d experts of width %d is not a valid mixture", s.NExpertUsed, s.NExpert, s.NFFExp)
	}
	if moeArch(s.Arch) != (s.NExpert > 0) {
		return s, fmt.Errorf("synth: %s with %d experts: the MoE architectures need experts, the dense ones none", s.Arch, s.NExpert)
	}
	if s.NVocab < 259 {
		return s, fmt.Errorf("synth: vocabulary of %d is smaller than the 259 special and byte tokens", s.NVocab)
	}
	return s, nil
}

// header returns a writer holding the model's metadata and vocabulary.
func header(s Shape, typ tensor.Type) *gguf.Writer {
	w := gguf.NewWriter()
	a := s.Arch
	w.Set("general.architecture", a)
	w.Set("general.name", "skulk-synth-"+s.Name)
	w.Set("general.file_type", uint32(fileType(typ)))
	w.Set(a+".block_count", uint32(s.NLayer+s.NextN))
	w.Set(a+".context_length", uint32(s.CtxLen))
	w.Set(a+".embedding_length", uint32(s.NEmbd))
	w.Set(a+".feed_forward_length", uint32(s.NFF))
	w.Set(a+".attention.head_count", uint32(s.NHead))
	w.Set(a+".attention.head_count_kv", uint32(s.NHeadKV))
	w.Set(a+".attention.key_length", uint32(s.HeadDim))
	if a != "deepseek2" {
		w.Set(a+".attention.value_length", uint32(s.HeadDim))
	}
	w.Set(a+".rope.dimension_count", uint32(s.RopeDim))
	w.Set(a+".rope.freq_base", s.RopeBase)
	w.Set(a+".attention.layer_norm_rms_epsilon", float32(1e-5))
	w.Set(a+".vocab_size", uint32(s.NVocab))
	if s.NExpert > 0 {
		w.Set(a+".expert_count", uint32(s.NExpert))
		w.Set(a+".expert_used_count", uint32(s.NExpertUsed))
		w.Set(a+".expert_feed_forward_length", uint32(s.NFFExp))
	}
	if s.YarnFactor > 0 {
		w.Set(a+".rope.scaling.type", "yarn")
		w.Set(a+".rope.scaling.factor", s.YarnFactor)
		w.Set(a+".rope.scaling.original_context_length", uint32(s.YarnOrigCtx))
		if s.YarnLogMul != 0 {
			w.Set(a+".rope.scaling.yarn_log_multiplier", s.YarnLogMul)
		}
		if s.YarnBetaFast != 0 {
			w.Set(a+".rope.scaling.yarn_beta_fast", s.YarnBetaFast)
		}
		if s.YarnBetaSlow != 0 {
			w.Set(a+".rope.scaling.yarn_beta_slow", s.YarnBetaSlow)
		}
	}
	if s.AttnTempScale != 0 {
		w.Set(a+".attention.temperature_scale", s.AttnTempScale)
	}
	if a == "deepseek2" {
		w.Set(a+".attention.value_length", uint32(s.KVLoraRank))
		if s.QLoraRank > 0 {
			w.Set(a+".attention.q_lora_rank", uint32(s.QLoraRank))
		}
		w.Set(a+".attention.kv_lora_rank", uint32(s.KVLoraRank))
		w.Set(a+".attention.key_length_mla", uint32(s.KeyLenMLA))
		w.Set(a+".attention.value_length_mla", uint32(s.ValueLenMLA))
		w.Set(a+".expert_group_count", uint32(s.NGroup))
		w.Set(a+".expert_group_used_count", uint32(s.NGroupUsed))
	}
	if s.SlidingWindow > 0 {
		w.Set(a+".attention.sliding_window", uint32(s.SlidingWindow))
	}
	if s.SoftCap > 0 {
		w.Set(a+".final_logit_softcapping", s.SoftCap)
	}
	if s.RopeLinear > 0 {
		w.Set(a+".rope.scaling.type", "linear")
		w.Set(a+".rope.scaling.factor", s.RopeLinear)
	}
	if s.LongRopeOrigCtx > 0 {
		// What convert_hf_to_gguf.py writes for LongRoPE ("su",
		// "longrope"): no scaling type, the original context, and
		// √(1 + ln(scale)/ln(original)) for the attention factor.
		w.Set(a+".rope.scaling.original_context_length", uint32(s.LongRopeOrigCtx))
		w.Set(a+".rope.scaling.attn_factor", longRopeAttnFactor(s.CtxLen, s.LongRopeOrigCtx))
	}
	if a == "llama4" {
		w.Set(a+".interleave_moe_layer_step", uint32(max(s.MoEStep, 1)))
	}
	if a == "glm4moe" || a == "deepseek2" {
		// GLM-4.5's routing: sigmoid scores, the chosen weights
		// renormalised and scaled by 2.5.
		w.Set(a+".expert_shared_count", uint32(s.NShared))
		w.Set(a+".leading_dense_block_count", uint32(s.LeadingDense))
		w.Set(a+".expert_weights_scale", float32(2.5))
		w.Set(a+".expert_weights_norm", true)
		w.Set(a+".expert_gating_func", uint32(2))
		w.Set(a+".nextn_predict_layers", uint32(s.NextN))
	}
	addVocab(w, s.NVocab)
	return w
}

// longRopeAttnFactor is convert_hf_to_gguf.py's attention factor for a
// LongRoPE model trained on orig positions and extended to ctx.
func longRopeAttnFactor(ctx, orig int) float32 {
	scale := float64(ctx) / float64(orig)
	if scale <= 1 {
		return 1
	}
	return float32(math.Sqrt(1 + math.Log(scale)/math.Log(float64(orig))))
}

// tensorSpec is one tensor of a synthetic model: its layout and the seed its
// values are drawn from. A matrix is rows×cols of N(0, 1/cols); a norm (rows
// = 0) is a vector of cols values near 1.
type tensorSpec struct {
	name string
	typ  tensor.Type
	bias bool // a vector of values near 0 rather than near 1
	// LongRoPE's long factors: a vector of values from 1 to about 40
	// that grow along it, as the real ones do (the slow pairs stretched
	// most), rather than near 1.
	longRope   bool
	rows, cols int
	experts    int // > 0: a 3-D expert tensor of experts matrices of rows × cols
	size       int64
	seed       uint64
}

func (t tensorSpec) dims() []uint64 {
	switch {
	case t.rows == 0:
		return []uint64{uint64(t.cols)}
	case t.experts > 0:
		return []uint64{uint64(t.cols), uint64(t.rows / t.experts), uint64(t.experts)}
	}
	return []uint64{uint64(t.cols), uint64(t.rows)}
}

// IsMoE says whether arch is a mixture-of-experts architecture, whose
// shapes need experts.
func IsMoE(arch string) bool { return moeArch(arch) }

func moeArch(arch string) bool {
	return arch == "qwen3moe" || arch == "glm4moe" || arch == "deepseek2" || arch == "gpt-oss" || arch == "llama4"
}

// plan lists the model's tensors in file order, drawing one seed per tensor
// from rng.
func plan(s Shape, mix Mix, rng *rand.Rand) []tensorSpec {
	var ts []tensorSpec
	add := func(name string, t tensor.Type, rows, cols, experts int) {
		size, _ := tensor.RowBytes(t, int64(max(rows, 1))*int64(cols))
		ts = append(ts, tensorSpec{name: name, typ: t, rows: rows, cols: cols, experts: experts, size: size, seed: rng.Uint64()})
	}
	mat := func(name string, rows, cols int) { add(name, Fallback(mix.typeOf(name), cols), rows, cols, 0) }
	norm := func(name string, n int) { add(name, tensor.F32, 0, n, 0) }
	bias := func(name string, n int) {
		add(name, tensor.F32, 0, n, 0)
		ts[len(ts)-1].bias = true
	}
	qd, kvd := s.NHead*s.HeadDim, s.NHeadKV*s.HeadDim
	glm := s.Arch == "glm4moe"
	oai := s.Arch == "gpt-oss"
	phi3 := s.Arch == "phi3"
	gemma3 := s.Arch == "gemma3"
	mat("token_embd.weight", s.NVocab, s.NEmbd)
	for l := 0; l < s.NLayer+s.NextN; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		norm(p+"attn_norm.weight", s.NEmbd)
		exps := func(name string, n, rows, cols int) {
			add(name, Fallback(mix.typeOf(name), cols), n*rows, cols, n)
		}
		if s.Arch == "deepseek2" {
			if s.QLoraRank > 0 {
				mat(p+"attn_q_a.weight", s.QLoraRank, s.NEmbd)
				norm(p+"attn_q_a_norm.weight", s.QLoraRank)
				mat(p+"attn_q_b.weight", s.NHead*s.KeyLenMLA, s.QLoraRank)
			} else {
				mat(p+"attn_q.weight", s.NHead*s.KeyLenMLA, s.NEmbd)
			}
			mat(p+"attn_kv_a_mqa.weight", s.KVLoraRank+s.RopeDim, s.NEmbd)
			norm(p+"attn_kv_a_norm.weight", s.KVLoraRank)
			exps(p+"attn_k_b.weight", s.NHead, s.KVLoraRank, s.KeyLenMLA-s.RopeDim)
			exps(p+"attn_v_b.weight", s.NHead, s.ValueLenMLA, s.KVLoraRank)
			mat(p+"attn_output.weight", s.NEmbd, s.NHead*s.ValueLenMLA)
		} else if phi3 {
			mat(p+"attn_qkv.weight", qd+2*kvd, s.NEmbd)
		} else {
			mat(p+"attn_q.weight", qd, s.NEmbd)
			mat(p+"attn_k.weight", kvd, s.NEmbd)
			mat(p+"attn_v.weight", kvd, s.NEmbd)
		}
		if glm || oai {
			bias(p+"attn_q.bias", qd)
			bias(p+"attn_k.bias", kvd)
			bias(p+"attn_v.bias", kvd)
		}
		if s.Arch != "deepseek2" {
			mat(p+"attn_output.weight", s.NEmbd, qd)
		}
		if oai {
			bias(p+"attn_output.bias", s.NEmbd)
			// Sink logits near 1, of the size of the attention scores.
			norm(p+"attn_sinks.weight", s.NHead)
		}
		if s.Arch == "qwen3" || s.Arch == "qwen3moe" || glm || gemma3 {
			norm(p+"attn_q_norm.weight", s.HeadDim)
			norm(p+"attn_k_norm.weight", s.HeadDim)
		}
		switch {
		case glm || oai:
			norm(p+"post_attention_norm.weight", s.NEmbd)
		case gemma3:
			// The attention output's norm, then the FFN's input's.
			norm(p+"post_attention_norm.weight", s.NEmbd)
			norm(p+"ffn_norm.weight", s.NEmbd)
		default:
			norm(p+"ffn_norm.weight", s.NEmbd)
		}
		if s.NExpert > 0 && l >= s.LeadingDense && (s.MoEStep <= 1 || (l+1)%s.MoEStep == 0) {
			// llama.cpp's quantizer leaves the router in F32.
			add(p+"ffn_gate_inp.weight", tensor.F32, s.NExpert, s.NEmbd, 0)
			if glm || s.Arch == "deepseek2" {
				bias(p+"exp_probs_b.bias", s.NExpert)
			}
			if oai {
				bias(p+"ffn_gate_inp.bias", s.NExpert)
			}
			exps(p+"ffn_gate_exps.weight", s.NExpert, s.NFFExp, s.NEmbd)
			exps(p+"ffn_up_exps.weight", s.NExpert, s.NFFExp, s.NEmbd)
			exps(p+"ffn_down_exps.weight", s.NExpert, s.NEmbd, s.NFFExp)
			if oai {
				// Per-expert biases: one F32 row per expert, as
				// llama.cpp's quantizer leaves them.
				add(p+"ffn_gate_exps.bias", tensor.F32, s.NExpert, s.NFFExp, 0)
				add(p+"ffn_up_exps.bias", tensor.F32, s.NExpert, s.NFFExp, 0)
				add(p+"ffn_down_exps.bias", tensor.F32, s.NExpert, s.NEmbd, 0)
			}
			if s.Arch == "llama4" {
				// One shared expert of the routed ones' width.
				mat(p+"ffn_gate_shexp.weight", s.NFFExp, s.NEmbd)
				mat(p+"ffn_up_shexp.weight", s.NFFExp, s.NEmbd)
				mat(p+"ffn_down_shexp.weight", s.NEmbd, s.NFFExp)
			}
			if w := s.NShared * s.NFFExp; w > 0 {
				mat(p+"ffn_gate_shexp.weight", w, s.NEmbd)
				mat(p+"ffn_up_shexp.weight", w, s.NEmbd)
				mat(p+"ffn_down_shexp.weight", s.NEmbd, w)
			}
		} else if phi3 {
			// Gate and up in one tensor, the gate first.
			mat(p+"ffn_up.weight", 2*s.NFF, s.NEmbd)
			mat(p+"ffn_down.weight", s.NEmbd, s.NFF)
		} else {
			mat(p+"ffn_gate.weight", s.NFF, s.NEmbd)
			mat(p+"ffn_up.weight", s.NFF, s.NEmbd)
			mat(p+"ffn_down.weight", s.NEmbd, s.NFF)
		}
		if gemma3 {
			norm(p+"post_ffw_norm.weight", s.NEmbd)
		}
		if l >= s.NLayer {
			// A next-token-prediction block: the engine skips it, as
			// llama.cpp does unless asked to draft with it.
			mat(p+"nextn.eh_proj.weight", s.NEmbd, 2*s.NEmbd)
			norm(p+"nextn.enorm.weight", s.NEmbd)
			norm(p+"nextn.hnorm.weight", s.NEmbd)
			norm(p+"nextn.shared_head_norm.weight", s.NEmbd)
		}
	}
	if s.LongRopeOrigCtx > 0 {
		// The converter writes them after the blocks, one per pair
		// of rotated dimensions, in F32 (the quantizer leaves 1-D
		// tensors alone).
		norm("rope_factors_short.weight", s.RopeDim/2)
		norm("rope_factors_long.weight", s.RopeDim/2)
		ts[len(ts)-1].longRope = true
	}
	norm("output_norm.weight", s.NEmbd)
	if !s.Tied {
		mat("output.weight", s.NVocab, s.NEmbd)
	}
	return ts
}

// chunkElems is about how many values one generator goroutine draws and
// quantizes at a time; chunks are whole rows.
const chunkElems = 1 << 16

// data draws and quantizes the tensor's values. Each chunk of rows has its
// own generator seeded by (tensor seed, chunk index), so the chunks can be
// made in parallel and the bytes do not depend on the number of CPUs.
func (t tensorSpec) data() ([]byte, error) {
	if t.rows == 0 {
		x := randn(rand.New(rand.NewPCG(t.seed, 0)), t.cols, 0.1)
		for i := range x {
			switch {
			case t.longRope:
				x[i] = float32(math.Pow(40, float64(i)/float64(t.cols))) * (1 + x[i])
			case !t.bias:
				x[i]++
			}
		}
		return tensor.Quantize(tensor.F32, x)
	}
	rowBytes := int(t.size) / t.rows
	per := max(1, chunkElems/t.cols)
	chunks := (t.rows + per - 1) / per
	std := float32(1 / math.Sqrt(float64(t.cols)))
	dst := make([]byte, t.size)
	var next atomic.Int64
	errs := make([]error, chunks)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), chunks) {
		wg.Go(func() {
			for c := int(next.Add(1) - 1); c < chunks; c = int(next.Add(1) - 1) {
				lo, hi := c*per, min((c+1)*per, t.rows)
				x := randn(rand.New(rand.NewPCG(t.seed, uint64(c))), (hi-lo)*t.cols, std)
				q, err := tensor.Quantize(t.typ, x)
				if err != nil {
					errs[c] = fmt.Errorf("synth: %s: %w", t.name, err)
					return
				}
				copy(dst[lo*rowBytes:hi*rowBytes], q)
			}
		})
	}
	wg.Wait()
	return dst, errors.Join(errs...)
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
		tensor.Q5_0: 8, tensor.Q5_1: 9, tensor.Q4_K: 15, tensor.Q5_K: 17, tensor.Q6_K: 18, tensor.BF16: 32,
		tensor.Q2_K: 10, tensor.Q3_K: 12, tensor.IQ4_NL: 25, tensor.IQ4_XS: 30, tensor.MXFP4: 38}
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
