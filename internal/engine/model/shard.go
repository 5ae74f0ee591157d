package model

import (
	"fmt"
	"runtime"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// Range selects the blocks [Start, End) of a model. First means the shard
// embeds token ids; Last means it applies the output norm and head.
type Range struct {
	Start, End  int
	First, Last bool
}

// Whole is the range of a whole model of n blocks.
func Whole(n int) Range { return Range{Start: 0, End: n, First: true, Last: true} }

// Options tune a loaded shard.
type Options struct {
	// Threads is the size of the shard's worker pool (the calling goroutine
	// included) for matmuls and attention; 0 = physical cores. Idle workers
	// spin briefly after each job, then park.
	Threads int
	// ExactActivations keeps matmul activations in F32 instead of rounding
	// them to the weights' dot-product type as llama.cpp does. Slower for
	// quantized weights; the reference for checking dequantization.
	ExactActivations bool
	// NoPack keeps every weight as the file stores it, memory-mapped,
	// instead of packing the types the kernels pack (tensor.Kernels.Pack)
	// into memory of their own: for a machine whose memory the model
	// nearly fills, where mapped pages can be dropped and read again but a
	// packed copy cannot. Decode and prefill are slower without packing.
	NoPack bool
	// F32Cache keeps the key/value cache in float32 instead of fp16
	// (llama.cpp's default, and ours): twice the memory, the setting of
	// reference runs made with an F32 cache.
	F32Cache bool
	// CacheType is the key/value cache's element type by name, as
	// llama.cpp's -ctk/-ctv: "" or "f16" (the default), "f32", "q8_0" or
	// "q4_0". It overrides F32Cache when set.
	CacheType string
	// Kernels caps the kernel set (tensor.Capped); "" uses the best the
	// CPU has.
	Kernels string
}

type layer struct {
	attnNorm, ffnNorm []float32
	q, k, v, o        *matrix
	qBias, kBias      []float32
	vBias             []float32
	qNorm, kNorm      []float32
	// The dense FFN; in a mixture-of-experts block, the shared experts
	// (nil without).
	gate, up, down *matrix
	// Mixture of experts: the router (n_expert × NEmbd), its selection
	// bias (glm4moe), and the experts.
	router                     *matrix
	routerBias                 []float32
	gateExps, upExps, downExps *experts
	mla                        mlaLayer
	oai                        oaiLayer
	window                     int // > 0: a sliding-window block (Config.swaLayer)
	// llama4: a block that attends within chunks of Config.ChunkSize
	// (Config.swaLayer); one without rotary positions, whose queries take
	// the attention temperature instead (Config.noRope); one whose roped
	// q and k are normalised without weights (Config.KQL2Norm).
	chunked, noRope, l2Norm bool

	// gemma3: the norms of the attention and FFN outputs before their
	// residual adds; nil otherwise.
	attnPostNorm, ffnPostNorm []float32
}

// oaiLayer is gpt-oss's extra per-block weights.
type oaiLayer struct {
	oBias      []float32 // attn_output.bias
	sinks      []float32 // attn_sinks: one logit per query head
	routerBias []float32 // ffn_gate_inp.bias, added to the router logits
	// Per-expert biases, NExpert rows of the projection's width.
	gateExpsBias, upExpsBias, downExpsBias []float32
}

// Shard is a loaded range of a model's blocks. It is immutable after Load
// and safe for concurrent Forward calls on different caches.
type Shard struct {
	Config Config
	Range  Range

	embd    *matrix // token_embd, when First (or when Last and tied)
	outNorm []float32
	output  *matrix // output or tied token_embd, when Last
	layers  []layer // index i is block Range.Start+i
	// ropeFreqs divide the rotary angles (llama3's rope_freqs, or
	// phi3's LongRoPE short factors); ropeLong, LongRoPE's long factors,
	// replace them for a sequence longer than the original context
	// (ropeFactors). Both nil: no factors.
	ropeFreqs, ropeLong []float32
	exactActs           bool
	kvType              tensor.Type // the cache's element type: F16, or F32 with Options.F32Cache
	// rotK and rotV are the Hadamard chunk sizes keys (with queries) and
	// values are rotated by before a quantized cache stores them; 0: none.
	rotK, rotV int
	k          tensor.Kernels
	swaAlign   int // see swaAlign
	// actRowBytes is the largest row of matmul activations in a vec-dot
	// type, over every matrix.
	actRowBytes int
	pool        *pool
}

// DefaultThreads is the number of physical cores as far as Go can tell:
// logical CPUs, halved when there are many (hyper-threads help little here).
func DefaultThreads() int {
	n := runtime.NumCPU()
	if n >= 8 {
		n /= 2
	}
	return n
}

// Load opens the blocks r of the model in f. The shard aliases f's tensor
// data: f must stay open while the shard is used. Close the shard to stop
// its workers.
func Load(f *gguf.File, r Range, opt Options) (*Shard, error) {
	cfg, err := ReadConfig(f)
	if err != nil {
		return nil, err
	}
	if r.Start < 0 || r.End > cfg.NLayer || r.Start > r.End || (r.Start == r.End && !r.First && !r.Last) {
		return nil, fmt.Errorf("model: layer range [%d, %d) is not within the model's %d blocks", r.Start, r.End, cfg.NLayer)
	}
	k, err := tensor.Capped(opt.Kernels)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	s := &Shard{Config: cfg, Range: r, exactActs: opt.ExactActivations, kvType: tensor.F16, k: k, swaAlign: swaAlign}
	if opt.F32Cache {
		s.kvType = tensor.F32
	}
	if opt.CacheType != "" {
		if s.kvType, err = ParseCacheType(opt.CacheType); err != nil {
			return nil, err
		}
	}
	if be := s.kvType.BlockElems(); be > 1 {
		// Keys and values are quantized along a head's elements: both
		// widths (they differ under latent attention) must be whole blocks.
		switch {
		case cfg.HeadDim%be != 0:
			return nil, &CacheTypeError{Name: opt.CacheType, Reason: fmt.Sprintf("head_dim %d is not a whole number of %d-element blocks", cfg.HeadDim, be)}
		case cfg.vHead()%be != 0:
			return nil, &CacheTypeError{Name: opt.CacheType, Reason: fmt.Sprintf("value head width %d is not a whole number of %d-element blocks", cfg.vHead(), be)}
		}
	}
	// llama.cpp stores latent attention's cache (deepseek2) unrotated: its
	// q8_0/q4_0 runs on that model match an unrotated cache to the last
	// bit at one position (testdata/synthetic/kvref-synth-deepseek2-*).
	quantized := s.kvType.BlockElems() > 1 && cfg.MLA.KVLoraRank == 0
	s.rotK, s.rotV = rotationSizes(cfg.HeadDim, quantized)
	threads := opt.Threads
	if threads <= 0 {
		threads = DefaultThreads()
	}
	l := loader{f: f, k: k, allowPack: !opt.ExactActivations && !opt.NoPack, threads: threads}
	if r.First || r.Last {
		if !l.has("token_embd.weight") && r.First {
			return nil, fmt.Errorf("model: missing tensor token_embd.weight")
		}
	}
	if cfg.NVocab == 0 {
		if ti, ok := f.Tensor("token_embd.weight"); ok && len(ti.Dims) == 2 {
			s.Config.NVocab = int(ti.Dims[1])
			cfg.NVocab = s.Config.NVocab
		}
	}
	if r.First {
		if s.embd, err = l.matrix("token_embd.weight", cfg.NVocab, cfg.NEmbd); err != nil {
			return nil, err
		}
	}
	if r.Last {
		if s.outNorm, err = l.vector("output_norm.weight", cfg.NEmbd); err != nil {
			return nil, err
		}
		name := "output.weight"
		if !l.has(name) {
			name = "token_embd.weight" // tied embeddings
		}
		load := l.packed
		if name == "token_embd.weight" {
			load = l.matrix // the embeddings' rows are read one by one too
		}
		if s.output, err = load(name, cfg.NVocab, cfg.NEmbd); err != nil {
			return nil, err
		}
	}
	if s.ropeFreqs, s.ropeLong, err = loadRopeFactors(l, cfg); err != nil {
		return nil, err
	}
	for b := r.Start; b < r.End; b++ {
		ly, err := loadLayer(l, cfg, b)
		if err != nil {
			return nil, err
		}
		s.layers = append(s.layers, ly)
	}
	s.actRowBytes = s.maxActRowBytes()
	s.pool = newPool(threads, spinFor)
	return s, nil
}

// loadRopeFactors loads the rotary frequency factors as llama.cpp's
// get_rope_factors picks them: rope_freqs when the file has it, otherwise
// LongRoPE's short and long factors (either may be absent).
func loadRopeFactors(l loader, c Config) (short, long []float32, err error) {
	n := c.RopeDim / 2
	if l.has("rope_freqs.weight") {
		short, err = l.vector("rope_freqs.weight", n)
		return short, nil, err
	}
	if short, err = l.optionalVector("rope_factors_short.weight", n); err != nil {
		return nil, nil, err
	}
	if long, err = l.optionalVector("rope_factors_long.weight", n); err != nil {
		return nil, nil, err
	}
	return short, long, nil
}

// ropeFactors returns the frequency factors of a sequence whose cache holds
// at most limit positions. LongRoPE's long factors apply when the sequence
// may grow past the original context, as llama.cpp chooses them by its
// context size (n_ctx_seq > n_ctx_orig_yarn), for every position alike:
// the keys already cached stay consistent with later queries, and a
// sequence that fits the original context keeps the short factors it was
// trained with.
func (s *Shard) ropeFactors(limit int) []float32 {
	if s.ropeLong != nil && limit > s.Config.RopeScaling.OrigCtx {
		return s.ropeLong
	}
	return s.ropeFreqs
}

func loadLayer(l loader, c Config, b int) (layer, error) {
	var (
		ly  layer
		err error
	)
	p := fmt.Sprintf("blk.%d.", b)
	m := func(name string, rows, cols int) *matrix {
		if err != nil {
			return nil
		}
		var mx *matrix
		mx, err = l.packed(p+name, rows, cols)
		return mx
	}
	v := func(name string, n int, optional bool) []float32 {
		if err != nil {
			return nil
		}
		var out []float32
		if optional {
			out, err = l.optionalVector(p+name, n)
		} else {
			out, err = l.vector(p+name, n)
		}
		return out
	}
	ly.attnNorm = v("attn_norm.weight", c.NEmbd, false)
	x := func(name string, n, rows, cols int) *experts {
		if err != nil {
			return nil
		}
		var e *experts
		e, err = l.experts(p+name, n, rows, cols)
		return e
	}
	if ml := c.MLA; ml.KVLoraRank > 0 {
		qw := c.NHead * ml.KeyLen
		if ml.QLoraRank > 0 {
			ly.mla.qA = m("attn_q_a.weight", ml.QLoraRank, c.NEmbd)
			ly.mla.qANorm = v("attn_q_a_norm.weight", ml.QLoraRank, false)
			ly.mla.qB = m("attn_q_b.weight", qw, ml.QLoraRank)
		} else {
			ly.q = m("attn_q.weight", qw, c.NEmbd)
		}
		ly.mla.kvA = m("attn_kv_a_mqa.weight", ml.KVLoraRank+ml.RopeDim, c.NEmbd)
		ly.mla.kvANorm = v("attn_kv_a_norm.weight", ml.KVLoraRank, false)
		ly.mla.kB = x("attn_k_b.weight", c.NHead, ml.KVLoraRank, ml.nope())
		ly.mla.vB = x("attn_v_b.weight", c.NHead, ml.ValueLen, ml.KVLoraRank)
		ly.o = m("attn_output.weight", c.NEmbd, c.NHead*ml.ValueLen)
	} else if c.Phi3 && l.has(p+"attn_qkv.weight") {
		// Fused q, k and v rows, in that order (llama.cpp's build_qkv
		// views of one product; each output is its own row's dot
		// product, so three products give the same values).
		if err == nil {
			var parts []*matrix
			if parts, err = l.split(p+"attn_qkv.weight", []int{c.QDim(), c.KVDim(), c.KVDim()}, c.NEmbd); err == nil {
				ly.q, ly.k, ly.v = parts[0], parts[1], parts[2]
			}
		}
		if bias := v("attn_qkv.bias", c.QDim()+2*c.KVDim(), true); bias != nil {
			ly.qBias, ly.kBias, ly.vBias = bias[:c.QDim()], bias[c.QDim():c.QDim()+c.KVDim()], bias[c.QDim()+c.KVDim():]
		}
		ly.o = m("attn_output.weight", c.NEmbd, c.QDim())
	} else {
		ly.q = m("attn_q.weight", c.QDim(), c.NEmbd)
		ly.k = m("attn_k.weight", c.KVDim(), c.NEmbd)
		ly.v = m("attn_v.weight", c.KVDim(), c.NEmbd)
		ly.o = m("attn_output.weight", c.NEmbd, c.QDim())
	}
	if ly.qBias == nil {
		// phi3's separate projections may carry biases, as llama.cpp's
		// create_tensor_qkv allows.
		ly.qBias = v("attn_q.bias", c.QDim(), !c.QKVBias)
		ly.kBias = v("attn_k.bias", c.KVDim(), !c.QKVBias)
		ly.vBias = v("attn_v.bias", c.KVDim(), !c.QKVBias)
	}
	switch {
	case c.QKNorm:
		ly.qNorm = v("attn_q_norm.weight", c.HeadDim, false)
		ly.kNorm = v("attn_k_norm.weight", c.HeadDim, false)
	case c.GLM:
		ly.qNorm = v("attn_q_norm.weight", c.HeadDim, true)
		ly.kNorm = v("attn_k_norm.weight", c.HeadDim, true)
	}
	if c.Gemma3 {
		ly.attnPostNorm = v("post_attention_norm.weight", c.NEmbd, false)
		ly.ffnPostNorm = v("post_ffw_norm.weight", c.NEmbd, false)
	}
	if c.OAI {
		ly.oai.oBias = v("attn_output.bias", c.NEmbd, false)
		ly.oai.sinks = v("attn_sinks.weight", c.NHead, false)
	}
	if c.swaLayer(b) {
		ly.window = c.SlidingWindow
		ly.chunked = c.ChunkSize > 0
	}
	if c.Llama4 {
		ly.noRope = c.noRope(b)
		ly.l2Norm = c.KQL2Norm && !ly.noRope
	}
	if c.GLM || c.OAI {
		ly.ffnNorm = v("post_attention_norm.weight", c.NEmbd, false)
	} else {
		ly.ffnNorm = v("ffn_norm.weight", c.NEmbd, false)
	}
	if mc := c.MoE; c.moeBlock(b) {
		ly.router = m("ffn_gate_inp.weight", mc.NExpert, c.NEmbd)
		ly.routerBias = v("exp_probs_b.bias", mc.NExpert, !c.GLM)
		if c.OAI {
			ly.oai.routerBias = v("ffn_gate_inp.bias", mc.NExpert, false)
			t := func(name string, w int) []float32 {
				if err != nil {
					return nil
				}
				var out []float32
				out, err = l.table(p+name, mc.NExpert, w)
				return out
			}
			ly.oai.gateExpsBias = t("ffn_gate_exps.bias", mc.NFF)
			ly.oai.upExpsBias = t("ffn_up_exps.bias", mc.NFF)
			ly.oai.downExpsBias = t("ffn_down_exps.bias", c.NEmbd)
		}
		ly.gateExps = x("ffn_gate_exps.weight", mc.NExpert, mc.NFF, c.NEmbd)
		ly.upExps = x("ffn_up_exps.weight", mc.NExpert, mc.NFF, c.NEmbd)
		ly.downExps = x("ffn_down_exps.weight", mc.NExpert, c.NEmbd, mc.NFF)
		if err == nil && !sameVecDot(ly.gateExps.all.typ, ly.upExps.all.typ) {
			err = fmt.Errorf("model: block %d: expert gate %s and up %s tensors need different activations, which this engine does not support",
				b, ly.gateExps.all.typ, ly.upExps.all.typ)
		}
		if w := mc.NShared * mc.NFF; w > 0 {
			ly.gate = m("ffn_gate_shexp.weight", w, c.NEmbd)
			ly.up = m("ffn_up_shexp.weight", w, c.NEmbd)
			ly.down = m("ffn_down_shexp.weight", c.NEmbd, w)
		}
		return ly, err
	}
	if c.Phi3 && !l.has(p+"ffn_gate.weight") {
		// ffn_up holds the gate's rows, then the up projection's: ggml's
		// swiglu of the fused product activates its first half.
		if err == nil {
			var parts []*matrix
			if parts, err = l.split(p+"ffn_up.weight", []int{c.NFF, c.NFF}, c.NEmbd); err == nil {
				ly.gate, ly.up = parts[0], parts[1]
			}
		}
	} else {
		ly.gate = m("ffn_gate.weight", c.NFF, c.NEmbd)
		ly.up = m("ffn_up.weight", c.NFF, c.NEmbd)
	}
	ly.down = m("ffn_down.weight", c.NEmbd, c.NFF)
	return ly, err
}

// sameVecDot says whether weights of types a and b take their activations
// in the same form.
func sameVecDot(a, b tensor.Type) bool {
	if a == tensor.F32 || b == tensor.F32 {
		return a == b
	}
	return tensor.VecDotType(a) == tensor.VecDotType(b)
}

// Close stops the shard's worker goroutines.
func (s *Shard) Close() { s.pool.close() }

// Kernels names the kernel set the shard computes with: "generic",
// "avx2", "avx512", "neon" or "neon-dotprod".
func (s *Shard) Kernels() string { return s.k.Name() }

// matrices lists every weight matrix the shard holds.
func (s *Shard) matrices() []*matrix {
	ms := []*matrix{s.embd, s.output}
	for _, l := range s.layers {
		ms = append(ms, l.q, l.k, l.v, l.o, l.gate, l.up, l.down, l.router, l.mla.qA, l.mla.qB, l.mla.kvA)
		for _, e := range []*experts{l.gateExps, l.upExps, l.downExps, l.mla.kB, l.mla.vB} {
			if e != nil {
				ms = append(ms, &e.all)
			}
		}
	}
	return ms
}

func (s *Shard) maxActRowBytes() int {
	n := 0
	for _, m := range s.matrices() {
		if m == nil || s.usesDotF32(m) || m.typ == tensor.F32 {
			continue
		}
		ab, _ := tensor.RowBytes(tensor.VecDotType(m.typ), int64(m.cols))
		n = max(n, int(ab))
	}
	return n
}

// WeightBytes is the size of the weights this shard reads.
func (s *Shard) WeightBytes() int64 {
	var n int64
	add := func(m *matrix) {
		if m != nil {
			n += int64(len(m.data))
		}
	}
	add(s.embd)
	if s.output != s.embd {
		add(s.output)
	}
	for _, l := range s.layers {
		for _, m := range []*matrix{l.q, l.k, l.v, l.o, l.gate, l.up, l.down, l.router, l.mla.qA, l.mla.qB, l.mla.kvA} {
			add(m)
		}
		for _, e := range []*experts{l.gateExps, l.upExps, l.downExps, l.mla.kB, l.mla.vB} {
			if e != nil {
				add(&e.all)
			}
		}
	}
	return n
}
