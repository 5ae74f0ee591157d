// Package model runs decoder-only transformer models of the llama family
// (llama, qwen2, qwen3), phi3 (Phi-3, Phi-4: fused projections, LongRoPE),
// gemma3 (interleaved sliding-window and global blocks), mistral3
// (Mistral Small 3.x, Ministral 3: llama's blocks with YaRN and a
// position-dependent query temperature) and the
// mixture-of-experts families (qwen3moe,
// glm4moe, deepseek2 with latent attention, gpt-oss with attention sinks
// and sliding-window blocks, llama4 with interleaved no-rope blocks and
// chunked attention) from GGUF files, whole or as a
// shard: a contiguous range of blocks plus, on the first shard, the token
// embedding and, on the last, the output norm and head. The same code serves a model on one node
// and one pipeline stage of a model spread over many.
package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// ErrUnsupportedArch is returned for a GGUF whose general.architecture the
// engine does not run.
var ErrUnsupportedArch = errors.New("unsupported model architecture")

// RopeScaling is how rotary positions are stretched past the trained context.
type RopeScaling struct {
	Type    string  // "", "none", "linear", "yarn" (llama3 scaling arrives as the rope_freqs tensor)
	Factor  float32 // linear, yarn: positions are divided by Factor
	OrigCtx int
	// YaRN (as llama.cpp computes it): LogMul is the file's
	// yarn_log_multiplier (deepseek2: divided by 0.1 as llama.cpp's
	// loader does), AttnFactor rope.scaling.attn_factor (1 when absent),
	// BetaFast/BetaSlow the correction range (32 and 1).
	LogMul, AttnFactor, BetaFast, BetaSlow float32
}

// Config is every hyperparameter the forward pass needs, read from GGUF
// metadata.
type Config struct {
	Arch          string
	NLayer        int
	NEmbd         int
	NHead         int
	NHeadKV       int
	HeadDim       int // per-head width of q and k (in the cache)
	VHeadDim      int // per-head width of v in the cache; HeadDim but for MLA
	NFF           int
	NVocab        int
	ContextLength int
	RMSEps        float32
	RopeBase      float32
	RopeDim       int  // rotated dimensions per head (≤ HeadDim)
	RopeNeoX      bool // pairs (i, i+RopeDim/2) instead of (2i, 2i+1)
	RopeScaling   RopeScaling
	QKNorm        bool    // qwen3: RMS-normalise q and k per head before rope
	QKVBias       bool    // qwen2: q, k, v projections have biases
	MoE           MoE     // mixture-of-experts feed-forward; zero for a dense model
	MLA           MLA     // multi-head latent attention (deepseek2); zero otherwise
	AttnScale     float32 // the attention scores' factor; 0 = 1/√HeadDim
	// GLM is glm4moe's block layout: optional q/k/v biases and q/k norms,
	// the FFN norm stored as post_attention_norm.
	GLM bool
	// OAI is gpt-oss's block layout: q/k/v and output biases, a learned
	// sink logit per head in the attention softmax, the FFN norm stored
	// as post_attention_norm, router and expert biases, SwiGLU-OAI.
	OAI bool
	// SlidingWindow > 0: the blocks swaLayer picks attend to the last
	// SlidingWindow positions only (llama.cpp's LLAMA_SWA_TYPE_STANDARD);
	// SWAPeriod is the pattern: block b slides when b%SWAPeriod <
	// SWAPeriod-1 (0: every block slides).
	SlidingWindow, SWAPeriod int
	// Phi3 is phi3's layout: the q/k/v projections fused in attn_qkv
	// (or separate), gate and up fused in ffn_up (gate the first half),
	// the queries scaled by 1/√HeadDim before their scores, as llama.cpp's
	// graph does, and LongRoPE (Shard.ropeFactors).
	Phi3 bool
	// Gemma3 is gemma3's layout: the embeddings scaled by √NEmbd, q/k
	// norms, norms of the attention and FFN outputs before their
	// residual adds (attn_post_norm, ffn_post_norm), a GELU-gated FFN.
	Gemma3 bool
	// QScale, when not 0, multiplies the roped queries before their
	// scores, as phi3's and gemma3's graphs do (their AttnScale is then
	// 1): fp16 keys meet the scaled queries, so where the factor is
	// applied shows in the bits.
	QScale float32
	// RopeBaseSWA, when not 0, is the rope base of the sliding-window
	// blocks, which take no RopeScaling (gemma3: the local blocks' 10000,
	// or rope.freq_base_swa; RopeBase and RopeScaling are the global
	// blocks').
	RopeBaseSWA float32
	// SoftCap > 0 caps the final logits at ±SoftCap: SoftCap·tanh(l/SoftCap)
	// (final_logit_softcapping; gemma2's files set it, gemma3's rarely).
	SoftCap float32
	// AttnTemp, when its Scale is not 0, multiplies the queries of the row
	// at position p by AttnTemp.factor(p) (Llama 4's attention
	// temperature): the roped queries of every block (mistral3's Ministral
	// 3 files set it), or with NoRopeStep only the no-rope blocks' (llama4).
	AttnTemp AttnTemp
	// Llama4 is llama4's layout (see readLlama4): the blocks swaLayer
	// picks attend within chunks of ChunkSize positions, every
	// NoRopeStep-th block takes no rotary positions but scales its queries
	// by the attention temperature, the others normalise their roped q
	// and k (KQL2Norm), and the experts' inputs carry the router weights.
	Llama4 bool
	// ChunkSize > 0: the blocks swaLayer picks attend only to the
	// positions of the query's own chunk, [p/ChunkSize·ChunkSize, p]
	// (llama.cpp's LLAMA_SWA_TYPE_CHUNKED).
	ChunkSize int
	// NoRopeStep > 0: block b takes no rotary positions when
	// (b+1)%NoRopeStep == 0 (llama.cpp's n_no_rope_layer_step).
	NoRopeStep int
	// KQL2Norm: the roped queries and keys of the blocks with rope are
	// RMS-normalised per head, without weights (llama4's use_kq_norm).
	KQL2Norm bool
}

// AttnTemp is llama.cpp's attention temperature tuning: the queries at
// position p are multiplied by 1 + Scale·ln(⌊(p+Offset)/Floor⌋ + 1), so
// they are unchanged in the first Floor positions and sharpen slowly past
// them. mistral3 reads Scale from attention.temperature_scale and takes
// the YaRN original context for Floor; llama4 hard-wires all three.
type AttnTemp struct {
	Scale  float32
	Floor  int
	Offset float32
}

// factor is the queries' factor at position pos, in llama.cpp's
// arithmetic: the position, offset and quotient in float32, the logarithm
// and the rest in double, the result rounded to float32.
func (t AttnTemp) factor(pos int) float32 {
	q := math.Floor(float64((float32(pos) + t.Offset) / float32(t.Floor)))
	return float32(math.Log(q+1)*float64(t.Scale) + 1)
}

// noRope says whether block b takes no rotary positions.
func (c Config) noRope(b int) bool { return c.NoRopeStep > 0 && (b+1)%c.NoRopeStep == 0 }

// swaLayer says whether block b attends through the sliding window, as
// llama.cpp's set_swa_pattern(period) decides.
func (c Config) swaLayer(b int) bool {
	if c.SlidingWindow <= 0 && c.ChunkSize <= 0 {
		return false
	}
	return c.SWAPeriod == 0 || b%c.SWAPeriod < c.SWAPeriod-1
}

// archTraits are the per-architecture differences.
type archTraits struct {
	neox, qkNorm, qkvBias bool
	moe                   bool
	// glm4moe: q/k/v biases and q/k norms where the file has them, the
	// FFN norm named post_attention_norm, sigmoid routing by default,
	// shared experts.
	glm bool
	// deepseek2: multi-head latent attention, softmax routing by default,
	// shared experts, grouped expert selection.
	mla bool
	// gpt-oss: see Config.OAI.
	oai bool
	// phi3: see Config.Phi3.
	phi3 bool
	// gemma3: see Config.Gemma3.
	gemma3 bool
	// mistral3: llama's blocks; YaRN's betas and log multiplier and the
	// attention temperature read as llama.cpp's mistral3 loader does.
	mistral3 bool
	// llama4: see Config.Llama4.
	llama4 bool
}

var archs = map[string]archTraits{
	"llama":     {},
	"qwen2":     {neox: true, qkvBias: true},
	"qwen3":     {neox: true, qkNorm: true},
	"qwen3moe":  {neox: true, qkNorm: true, moe: true},
	"glm4moe":   {neox: true, moe: true, glm: true},
	"deepseek2": {moe: true, mla: true},
	"gpt-oss":   {neox: true, qkvBias: true, moe: true, oai: true},
	"phi3":      {neox: true, phi3: true},
	"gemma3":    {neox: true, qkNorm: true, gemma3: true},
	"mistral3":  {mistral3: true},
	"llama4":    {moe: true, llama4: true},
}

// SupportedArchs lists the architectures this package runs.
func SupportedArchs() []string {
	return []string{"llama", "qwen2", "qwen3", "phi3", "gemma3", "mistral3", "qwen3moe", "glm4moe", "deepseek2", "gpt-oss", "llama4"}
}

// ReadConfig reads the hyperparameters of f.
func ReadConfig(f *gguf.File) (Config, error) {
	arch := f.Architecture()
	tr, ok := archs[arch]
	if !ok {
		return Config{}, fmt.Errorf("%w %q (supported: %s)", ErrUnsupportedArch, arch, strings.Join(SupportedArchs(), ", "))
	}
	c := Config{Arch: arch, RopeNeoX: tr.neox, QKNorm: tr.qkNorm, QKVBias: tr.qkvBias, GLM: tr.glm, OAI: tr.oai, Phi3: tr.phi3, Gemma3: tr.gemma3, Llama4: tr.llama4}
	key := func(k string) string { return arch + "." + k }
	var err error
	need := func(k string, dst *int, min int) {
		if err != nil {
			return
		}
		v, ok := f.Uint(key(k))
		if !ok {
			if _, isArr := f.Array(key(k)); isArr {
				err = fmt.Errorf("model: %s is a per-layer array, which this engine does not support", key(k))
				return
			}
			err = fmt.Errorf("model: missing or non-integer metadata %s", key(k))
			return
		}
		if v < uint64(min) || v > 1<<24 {
			err = fmt.Errorf("model: metadata %s = %d is out of range", key(k), v)
			return
		}
		*dst = int(v)
	}
	need("block_count", &c.NLayer, 1)
	need("embedding_length", &c.NEmbd, 1)
	need("attention.head_count", &c.NHead, 1)
	if tr.moe {
		if e := c.readMoE(f, tr, need, &err); e != nil {
			err = e
		}
	} else {
		need("feed_forward_length", &c.NFF, 1)
	}
	if err != nil {
		return Config{}, err
	}
	c.NHeadKV = c.NHead
	if _, ok := f.Get(key("attention.head_count_kv")); ok {
		need("attention.head_count_kv", &c.NHeadKV, 1)
	}
	c.HeadDim = c.NEmbd / c.NHead
	if _, ok := f.Get(key("attention.key_length")); ok {
		need("attention.key_length", &c.HeadDim, 1)
	}
	if tr.mla {
		if err := c.readMLA(f); err != nil {
			return Config{}, err
		}
	} else if v, ok := f.Uint(key("attention.value_length")); ok && int(v) != c.HeadDim {
		return Config{}, fmt.Errorf("model: value_length %d differs from key_length %d, which this engine does not support", v, c.HeadDim)
	}
	if c.RopeDim == 0 {
		c.RopeDim = c.HeadDim
	}
	if _, ok := f.Get(key("rope.dimension_count")); ok && !tr.mla {
		need("rope.dimension_count", &c.RopeDim, 2)
	}
	c.ContextLength = 2048
	if _, ok := f.Get(key("context_length")); ok {
		need("context_length", &c.ContextLength, 1)
	}
	if err != nil {
		return Config{}, err
	}
	eps, ok := f.Float(key("attention.layer_norm_rms_epsilon"))
	if !ok {
		return Config{}, fmt.Errorf("model: missing metadata %s", key("attention.layer_norm_rms_epsilon"))
	}
	c.RMSEps = float32(eps)
	c.RopeBase = 10000
	if b, ok := f.Float(key("rope.freq_base")); ok {
		c.RopeBase = float32(b)
	}
	if s, ok := f.String(key("rope.scaling.type")); ok {
		c.RopeScaling.Type = s
	}
	if fac, ok := f.Float(key("rope.scaling.factor")); ok {
		c.RopeScaling.Factor = float32(fac)
	}
	if oc, ok := f.Uint(key("rope.scaling.original_context_length")); ok && oc < 1<<24 {
		c.RopeScaling.OrigCtx = int(oc)
	}
	rs := &c.RopeScaling
	rs.AttnFactor, rs.BetaFast, rs.BetaSlow = 1, 32, 1
	if v, ok := f.Float(key("rope.scaling.attn_factor")); ok {
		rs.AttnFactor = float32(v)
	}
	switch rs.Type {
	case "", "none":
	case "linear":
		if !(rs.Factor > 0) {
			return Config{}, fmt.Errorf("model: linear rope scaling with factor %v", rs.Factor)
		}
	case "yarn":
		if !(rs.Factor > 0) {
			return Config{}, fmt.Errorf("model: yarn rope scaling with factor %v", rs.Factor)
		}
		if rs.OrigCtx == 0 {
			rs.OrigCtx = c.ContextLength
		}
		if v, ok := f.Float(key("rope.scaling.yarn_log_multiplier")); ok && tr.mla {
			// deepseek2's loader reads it undoing the converter's 0.1;
			// mistral3's as it is (readMistral3).
			rs.LogMul = float32(v) / 0.1
		}
	default:
		return Config{}, fmt.Errorf("model: rope scaling %q is not supported (supported: none, linear, yarn, llama3 rope_freqs)", rs.Type)
	}
	if tr.mla {
		c.AttnScale = c.mlaAttnScale()
	}
	if tr.oai {
		// llama.cpp scales gpt-oss's scores by 1/√n_rot.
		c.AttnScale = float32(1 / math.Sqrt(float64(c.RopeDim)))
	}
	if tr.phi3 {
		if err := c.readPhi3(f); err != nil {
			return Config{}, err
		}
	}
	if tr.gemma3 {
		if err := c.readGemma3(f); err != nil {
			return Config{}, err
		}
	}
	if tr.mistral3 {
		if err := c.readMistral3(f); err != nil {
			return Config{}, err
		}
	}
	if tr.llama4 {
		if err := c.readLlama4(f); err != nil {
			return Config{}, err
		}
	}
	if toks, ok := f.Array("tokenizer.ggml.tokens"); ok {
		c.NVocab = toks.Len()
	}
	if v, ok := f.Uint(key("vocab_size")); ok && v > 0 && v < 1<<24 {
		c.NVocab = int(v)
	}
	return c, c.validate()
}

// readMoE reads the mixture-of-experts metadata of an MoE architecture, as
// llama.cpp's loader reads it for that architecture.
// need is ReadConfig's reader of integer keys, which records its first
// failure in *errp.
func (c *Config) readMoE(f *gguf.File, tr archTraits, need func(string, *int, int), errp *error) error {
	key := func(k string) string { return c.Arch + "." + k }
	// An MoE model's dense width is only used by its leading dense blocks.
	if _, ok := f.Get(key("feed_forward_length")); ok {
		need("feed_forward_length", &c.NFF, 1)
	}
	need("expert_count", &c.MoE.NExpert, 1)
	need("expert_used_count", &c.MoE.NExpertUsed, 1)
	need("expert_feed_forward_length", &c.MoE.NFF, 1)
	if tr.oai {
		return c.readOAI(f, need, errp)
	}
	if tr.llama4 {
		// Every interleave_moe_layer_step-th block routes through
		// experts, with one shared expert of the experts' width; the
		// others are dense blocks of feed_forward_length.
		need("interleave_moe_layer_step", &c.MoE.Interleave, 1)
		c.MoE.Gating, c.MoE.NShared = GatingSigmoidInput, 1
		return *errp
	}
	if !tr.glm && !tr.mla {
		// qwen3moe: softmax over the experts, the chosen weights
		// renormalised (llama.cpp hard-wires both).
		c.MoE.Gating, c.MoE.NormTopK = GatingSoftmax, true
		return *errp
	}
	need("expert_shared_count", &c.MoE.NShared, 0)
	if _, ok := f.Get(key("leading_dense_block_count")); ok {
		need("leading_dense_block_count", &c.MoE.LeadingDense, 0)
	}
	if _, ok := f.Get(key("nextn_predict_layers")); ok {
		// The multi-token-prediction blocks after the trunk are not run.
		need("nextn_predict_layers", &c.MoE.NextN, 0)
	}
	if *errp != nil {
		return *errp
	}
	c.NLayer -= c.MoE.NextN
	c.MoE.Gating = GatingSigmoid // glm4moe's default
	if tr.mla {
		// DeepSeek V2 files name no gating function: softmax.
		c.MoE.Gating = GatingSoftmax
	}
	if g, ok := f.Uint(key("expert_gating_func")); ok && g != 0 {
		switch g {
		case 1:
			c.MoE.Gating = GatingSoftmax
		case 2:
			c.MoE.Gating = GatingSigmoid
		default:
			return fmt.Errorf("model: %s = %d is not a gating function this engine supports (1 softmax, 2 sigmoid)", key("expert_gating_func"), g)
		}
	}
	if b, ok := f.Bool(key("expert_weights_norm")); ok {
		c.MoE.NormTopK = b
	}
	if s, ok := f.Float(key("expert_weights_scale")); ok {
		c.MoE.Scale = float32(s)
	}
	if g, ok := f.Uint(key("expert_group_count")); ok && g > 1 {
		u, _ := f.Uint(key("expert_group_used_count"))
		// A group's score is its two best experts': groups hold two or more.
		if 2*g > uint64(c.MoE.NExpert) || uint64(c.MoE.NExpert)%g != 0 || u < 1 || u >= g {
			return fmt.Errorf("model: %d expert groups of which %d are used does not divide %d experts", g, u, c.MoE.NExpert)
		}
		c.MoE.NGroup, c.MoE.NGroupUsed = int(g), int(u)
	}
	if secs, ok := f.Int32s(key("rope.dimension_sections")); ok && slices.ContainsFunc(secs, func(v int32) bool { return v != 0 }) {
		return fmt.Errorf("model: %s: multi-section (M-RoPE) rotary positions are not supported", key("rope.dimension_sections"))
	}
	return nil
}

// readOAI reads gpt-oss's routing and sliding-window metadata as
// llama.cpp's loader does: top-k of the router logits, then a softmax over
// the chosen ones; every other block (the even ones) attends through a
// window of sliding_window positions.
func (c *Config) readOAI(f *gguf.File, need func(string, *int, int), errp *error) error {
	key := func(k string) string { return c.Arch + "." + k }
	// llama.cpp's gpt-oss loader reads no expert_weights_scale: the
	// weights are the softmax's, unscaled.
	c.MoE.Gating = GatingSoftmaxWeight
	need("attention.sliding_window", &c.SlidingWindow, 1)
	c.SWAPeriod = 2
	if _, ok := f.Get(key("attention.sliding_window_pattern")); ok {
		need("attention.sliding_window_pattern", &c.SWAPeriod, 0)
	}
	if *errp != nil {
		return *errp
	}
	if b, ok := f.Float(key("rope.freq_base_swa")); ok {
		if base, _ := f.Float(key("rope.freq_base")); b != base {
			return fmt.Errorf("model: %s = %v differs from rope.freq_base, which this engine does not support", key("rope.freq_base_swa"), b)
		}
	}
	return nil
}

// readPhi3 reads phi3's LongRoPE and sliding-window metadata. The
// converter writes no rope.scaling.type for LongRoPE, only the original
// context (the short factors' range) and the attention factor that scales
// cos and sin whichever factors apply; without the former llama.cpp takes
// the trained context.
func (c *Config) readPhi3(f *gguf.File) error {
	if c.RopeScaling.OrigCtx == 0 {
		c.RopeScaling.OrigCtx = c.ContextLength
	}
	// The scores' factor is applied to the queries instead (qkv), as
	// llama.cpp's phi3 graph does (1.0f/sqrtf(n_embd_head)).
	c.AttnScale, c.QScale = 1, invSqrtf(c.HeadDim)
	if v, ok := f.Uint(c.Arch + ".attention.sliding_window"); ok && v > 0 {
		// Phi-3-mini-4k and -small files set it (2047): HF's
		// transformers attends through it on every block, and so does
		// this engine, where llama.cpp (at the pinned release) ignores
		// it. The two agree while a sequence is at most that long.
		if v >= 1<<24 {
			return fmt.Errorf("model: %s.attention.sliding_window = %d is out of range", c.Arch, v)
		}
		c.SlidingWindow, c.SWAPeriod = int(v), 0
	}
	return nil
}

// invSqrtf is C's 1.0f/sqrtf((float)n): sqrtf is correctly rounded, as is
// float64's square root of a float32 rounded back.
func invSqrtf(n int) float32 {
	return 1 / float32(math.Sqrt(float64(float32(n))))
}

// readGemma3 reads gemma3's sliding-window schedule, rope bases, logit cap
// and query scale as llama.cpp's loader does. A file with a window has
// local blocks in a pattern of period sliding_window_pattern (6 when
// absent: five local blocks, then a global one), whose rope base is
// rope.freq_base_swa (10000 when absent) without the rope scaling, which
// only the global blocks take; a file without one has global blocks only.
func (c *Config) readGemma3(f *gguf.File) error {
	key := func(k string) string { return c.Arch + "." + k }
	if v, ok := f.Uint(key("attention.sliding_window")); ok && v > 0 {
		if v >= 1<<24 {
			return fmt.Errorf("model: %s = %d is out of range", key("attention.sliding_window"), v)
		}
		c.SlidingWindow, c.SWAPeriod = int(v), 6
		if _, ok := f.Get(key("attention.sliding_window_pattern")); ok {
			p, ok := f.Uint(key("attention.sliding_window_pattern"))
			if !ok || p >= 1<<24 {
				return fmt.Errorf("model: %s is not a period this engine supports (a per-layer array, or out of range)", key("attention.sliding_window_pattern"))
			}
			c.SWAPeriod = int(p)
		}
		c.RopeBaseSWA = 10000
		if b, ok := f.Float(key("rope.freq_base_swa")); ok {
			c.RopeBaseSWA = float32(b)
		}
		if !(c.RopeBaseSWA > 0) {
			return fmt.Errorf("model: %s = %v", key("rope.freq_base_swa"), c.RopeBaseSWA)
		}
	}
	if c.RopeScaling.Type == "yarn" {
		// llama.cpp's YaRN parameters are the context's, shared by the
		// local blocks' rope; no gemma3 file is known to use it.
		return fmt.Errorf("model: gemma3 with yarn rope scaling is not supported")
	}
	if v, ok := f.Float(key("final_logit_softcapping")); ok && v != 0 {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("model: %s = %v", key("final_logit_softcapping"), v)
		}
		c.SoftCap = float32(v)
	}
	// The queries are scaled by 1/√query_pre_attn_scalar after rope, and
	// the scores not at all. llama.cpp does not read the scalar: it takes
	// n_embd/n_head for the 27B model (62 blocks), the head width for the
	// others, as Google's reference configurations set it.
	c.AttnScale, c.QScale = 1, invSqrtf(c.HeadDim)
	if c.NLayer == 62 {
		c.QScale = invSqrtf(c.NEmbd / c.NHead)
	}
	return nil
}

// readMistral3 reads what llama.cpp's mistral3 loader reads beyond
// llama's: YaRN's correction range (rope.scaling.yarn_beta_fast and
// yarn_beta_slow, 32 and 1 when absent) and its log multiplier (the
// converter's mscale_all_dim, taken as it is: with 1, as Ministral 3
// files set it, the rope's magnitude correction cancels out), and the
// attention temperature (attention.temperature_scale, Llama 4's beta),
// whose floor is the YaRN original context (the trained one when the file
// names none). Mistral Small 3.x files set none of these: they run as
// llama does.
func (c *Config) readMistral3(f *gguf.File) error {
	key := func(k string) string { return c.Arch + "." + k }
	rs := &c.RopeScaling
	if c.RopeDim != c.HeadDim {
		// llama.cpp's mistral3 graph asserts n_rot == n_embd_head.
		return fmt.Errorf("model: mistral3 with %d of %d head dimensions rotated is not supported", c.RopeDim, c.HeadDim)
	}
	if v, ok := f.Uint(key("expert_count")); ok && v > 0 {
		return fmt.Errorf("model: mistral3 with %d experts is not supported", v)
	}
	for _, b := range []struct {
		k   string
		dst *float32
	}{{"rope.scaling.yarn_beta_fast", &rs.BetaFast}, {"rope.scaling.yarn_beta_slow", &rs.BetaSlow}, {"rope.scaling.yarn_log_multiplier", &rs.LogMul}} {
		if v, ok := f.Float(key(b.k)); ok {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("model: %s = %v", key(b.k), v)
			}
			*b.dst = float32(v)
		}
	}
	if v, ok := f.Float(key("attention.temperature_scale")); ok && v != 0 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("model: %s = %v", key("attention.temperature_scale"), v)
		}
		// hparams.n_ctx_orig_yarn: the original context, or the trained
		// one (whatever the rope scaling).
		floor := c.ContextLength
		if oc, ok := f.Uint(key("rope.scaling.original_context_length")); ok {
			if oc == 0 || oc >= 1<<24 {
				return fmt.Errorf("model: %s = %d is not a floor for the attention temperature", key("rope.scaling.original_context_length"), oc)
			}
			floor = int(oc)
		}
		c.AttnTemp = AttnTemp{Scale: float32(v), Floor: floor}
	}
	return nil
}

// readLlama4 reads llama4's attention schedule as llama.cpp's loader
// sets it. The converter writes none of it and llama.cpp hard-wires
// Llama 4's values: chunks of 8192 positions on the blocks of a pattern
// of period attention.sliding_window_pattern (4 when absent: three
// chunked blocks, then a full one), no rope on every fourth block, whose
// queries take the attention temperature (floor 8192, scale 0.1, offset
// 1), and q/k normalisation on the others unless the model has 128
// experts (Maverick). A file with sliding_window 0 (MobileLLM) is one
// llama.cpp's pinned release aborts on (its temperature input has no
// scale); the engine refuses it.
func (c *Config) readLlama4(f *gguf.File) error {
	key := func(k string) string { return c.Arch + "." + k }
	if v, ok := f.Uint(key("attention.sliding_window")); ok && v == 0 {
		return fmt.Errorf("model: llama4 with %s = 0 (no chunked attention) is not supported", key("attention.sliding_window"))
	}
	c.ChunkSize, c.SWAPeriod = 8192, 4
	if _, ok := f.Get(key("attention.sliding_window_pattern")); ok {
		p, ok := f.Uint(key("attention.sliding_window_pattern"))
		if !ok || p >= 1<<24 {
			return fmt.Errorf("model: %s is not a period this engine supports (a per-layer array, or out of range)", key("attention.sliding_window_pattern"))
		}
		c.SWAPeriod = int(p)
	}
	if b, ok := f.Float(key("rope.freq_base_swa")); ok && float32(b) != c.RopeBase {
		return fmt.Errorf("model: %s = %v differs from rope.freq_base, which this engine does not support", key("rope.freq_base_swa"), b)
	}
	if c.RopeDim != c.HeadDim {
		return fmt.Errorf("model: llama4 rotates %d of %d head dimensions; llama.cpp's graph needs all", c.RopeDim, c.HeadDim)
	}
	if c.RopeScaling.Type == "yarn" {
		return fmt.Errorf("model: llama4 with yarn rope scaling is not supported")
	}
	c.NoRopeStep = 4
	c.AttnTemp = AttnTemp{Scale: 0.1, Floor: 8192, Offset: 1}
	c.KQL2Norm = c.MoE.NExpert != 128
	return nil
}

// embedScale is the factor of the token embeddings: gemma3's √NEmbd (a
// float32 sqrtf, as llama.cpp's graph takes it), 1 otherwise.
func (c Config) embedScale() float32 {
	if !c.Gemma3 {
		return 1
	}
	return float32(math.Sqrt(float64(float32(c.NEmbd))))
}

// readMLA reads deepseek2's latent attention geometry. The cache holds
// one key head of KVLoraRank+RopeDim values and one value head of
// KVLoraRank values per position.
func (c *Config) readMLA(f *gguf.File) error {
	key := func(k string) string { return c.Arch + "." + k }
	get := func(k string, dst *int) bool {
		v, ok := f.Uint(key(k))
		if ok && v > 0 && v < 1<<20 {
			*dst = int(v)
		}
		return ok
	}
	m := &c.MLA
	get("attention.q_lora_rank", &m.QLoraRank)
	if !get("attention.kv_lora_rank", &m.KVLoraRank) || m.KVLoraRank == 0 {
		return fmt.Errorf("model: missing metadata %s", key("attention.kv_lora_rank"))
	}
	if !get("attention.key_length_mla", &m.KeyLen) || !get("attention.value_length_mla", &m.ValueLen) {
		return fmt.Errorf("model: %s has no %s: a file with the older combined attn_kv_b tensor; convert it again with a current llama.cpp",
			c.Arch, key("attention.key_length_mla"))
	}
	if !get("rope.dimension_count", &m.RopeDim) || m.RopeDim == 0 || m.RopeDim >= m.KeyLen || m.RopeDim%2 != 0 {
		return fmt.Errorf("model: %s = %d does not fit the key width %d", key("rope.dimension_count"), m.RopeDim, m.KeyLen)
	}
	c.NHeadKV = 1
	c.HeadDim = m.KVLoraRank + m.RopeDim
	c.VHeadDim = m.KVLoraRank
	c.RopeDim = m.RopeDim
	return nil
}

// logf is C's logf as far as the result goes (log of a float, rounded).
func logf(x float32) float32 { return float32(math.Log(float64(x))) }

// yarn returns YaRN's frequency scale and the attention factor llama.cpp
// passes to its rope (cparams.yarn_attn_factor), in its float32 steps.
func (c Config) yarn() (freqScale, attnFactor float32) {
	rs := c.RopeScaling
	if rs.Type != "yarn" {
		return 1, rs.AttnFactor
	}
	freqScale = 1 / rs.Factor
	factor := 1 / freqScale
	mscale := func(scale, m float32) float32 {
		if scale <= 1 {
			return 1
		}
		return float32(0.1*m*logf(scale)) + 1
	}
	if rs.LogMul != 0 {
		m := float32(1)
		if c.MLA.KVLoraRank > 0 && rs.LogMul != 1 {
			m = rs.LogMul
		}
		attnFactor = mscale(factor, m) / mscale(factor, rs.LogMul)
	} else {
		attnFactor = mscale(factor, 1)
	}
	attnFactor *= 1 / (1 + float32(0.1*logf(factor)))
	return freqScale, attnFactor * rs.AttnFactor
}

// mlaAttnScale is deepseek2's attention factor: 1/√KeyLen times the square
// of YaRN's magnitude correction, as its graph pre-scales it.
func (c Config) mlaAttnScale() float32 {
	freqScale, attnFactor := c.yarn()
	org := attnFactor * (1 + float32(0.1*logf(1/freqScale)))
	ms := org * (1 + float32(0.1*c.RopeScaling.LogMul*logf(1/freqScale)))
	return float32(ms*ms) / float32(math.Sqrt(float64(c.MLA.KeyLen)))
}

func (c Config) validate() error {
	switch {
	case c.NHead%c.NHeadKV != 0:
		return fmt.Errorf("model: %d heads is not a multiple of %d KV heads", c.NHead, c.NHeadKV)
	case c.RopeDim > c.HeadDim || c.RopeDim%2 != 0:
		return fmt.Errorf("model: rope dimension %d does not fit head dimension %d", c.RopeDim, c.HeadDim)
	case !(c.RMSEps > 0) || math.IsInf(float64(c.RMSEps), 0):
		return fmt.Errorf("model: RMS epsilon %v", c.RMSEps)
	case !(c.RopeBase > 0):
		return fmt.Errorf("model: rope base %v", c.RopeBase)
	case c.NLayer < 1:
		return fmt.Errorf("model: no blocks besides the %d next-token-prediction ones", c.MoE.NextN)
	case c.MoE.LeadingDense > 0 && c.NFF == 0:
		return fmt.Errorf("model: %d leading dense blocks but no feed_forward_length", c.MoE.LeadingDense)
	case c.MoE.Interleave > 1 && c.NFF == 0:
		return fmt.Errorf("model: dense blocks between the expert ones (interleave step %d) but no feed_forward_length", c.MoE.Interleave)
	case c.MoE.NExpert > 0 && (c.MoE.NExpertUsed > c.MoE.NExpert || c.MoE.NExpert > maxExperts):
		return fmt.Errorf("model: %d of %d experts per token is not a valid mixture (at most %d experts)",
			c.MoE.NExpertUsed, c.MoE.NExpert, maxExperts)
	}
	return nil
}

// QDim is the width of the concatenated query heads; KVDim of K; VDim of
// V; AttnDim of the attention output (one V row per query head).
func (c Config) QDim() int    { return c.NHead * c.HeadDim }
func (c Config) KVDim() int   { return c.NHeadKV * c.HeadDim }
func (c Config) VDim() int    { return c.NHeadKV * c.vHead() }
func (c Config) AttnDim() int { return c.NHead * c.vHead() }

func (c Config) vHead() int {
	if c.VHeadDim > 0 {
		return c.VHeadDim
	}
	return c.HeadDim
}

// attnScale is the factor of the attention scores: 1/√HeadDim, or what
// the architecture sets (MLA: 1/√ of the uncompressed key width).
func (c Config) attnScale() float32 {
	if c.AttnScale != 0 {
		return c.AttnScale
	}
	return float32(1 / math.Sqrt(float64(c.HeadDim)))
}
