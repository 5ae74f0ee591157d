package model

import (
	"fmt"
	"math"
	"sync"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// Batch is the input of one forward pass over consecutive positions of a
// sequence, starting at the cache's current length.
type Batch struct {
	Tokens []int32   // token ids; the first shard's input
	Hidden []float32 // n × NEmbd hidden states from the previous shard
	// AllLogits asks the last shard for the logits of every position instead
	// of only the last one.
	AllLogits bool
}

// Result is the output of a forward pass: hidden states for the next shard,
// or, from the last shard, logits (one row of NVocab per requested position).
// Both alias the cache's scratch memory: they stay valid until the next
// Forward on the same cache; copy them to keep them longer.
type Result struct {
	Hidden []float32
	Logits []float32
}

// Forward runs the batch through the shard's blocks, appending its keys and
// values to c. After the cache has seen a batch at least as large, Forward
// allocates nothing.
func (s *Shard) Forward(c *Cache, b Batch) (Result, error) {
	cfg := s.Config
	d := cfg.NEmbd
	n := len(b.Tokens)
	if s.Range.First {
		if b.Hidden != nil {
			return Result{}, fmt.Errorf("model: the first shard takes token ids, not hidden states")
		}
		if err := s.checkTokens(b.Tokens, "position"); err != nil {
			return Result{}, err
		}
	} else {
		if b.Tokens != nil {
			return Result{}, fmt.Errorf("model: shard [%d, %d) takes hidden states, not token ids", s.Range.Start, s.Range.End)
		}
		if len(b.Hidden)%d != 0 {
			return Result{}, fmt.Errorf("model: %d hidden values is not a whole number of %d-wide rows", len(b.Hidden), d)
		}
		n = len(b.Hidden) / d
	}
	if n == 0 {
		return Result{}, fmt.Errorf("model: empty batch")
	}
	if !s.owns(c) {
		return Result{}, fmt.Errorf("model: cache was made for another shard")
	}
	if err := c.fit(n); err != nil {
		return Result{}, err
	}
	nLogits := 0
	if s.Range.Last {
		nLogits = 1
		if b.AllLogits {
			nLogits = n
		}
	}
	a := &c.ar
	a.prepare(s, c.cap, n, nLogits)
	x := a.x
	if err := s.input(b, x); err != nil {
		return Result{}, err
	}
	for u := 0; u < n; u += ubatch {
		m := min(ubatch, n-u)
		xu := x[u*d : (u+m)*d]
		for t := range m {
			a.pos[t] = c.len + t
		}
		one := [1]seg{{c: c, n: m}}
		s.ropeTables(a, a.pos[:m], one[:])
		// The head reads only the last position unless every position's
		// logits are wanted, so the last block need not finish the others
		// once their keys and values are stored.
		lastOnly := s.Range.Last && !b.AllLogits && u+m == n
		for i := range s.layers {
			s.block(i, one[:], a, xu, m, lastOnly && i == len(s.layers)-1)
		}
		c.len += m
		if b.AllLogits && s.Range.Last {
			s.head(a, xu, m, a.logits[u*cfg.NVocab:])
		}
	}
	if !s.Range.Last {
		return Result{Hidden: x}, nil
	}
	if !b.AllLogits {
		s.head(a, x[(n-1)*d:], 1, a.logits)
	}
	return Result{Logits: a.logits}, nil
}

// owns reports whether c was made by a shard of this one's blocks and width.
func (s *Shard) owns(c *Cache) bool {
	return len(c.k) == len(s.layers) && c.kvDim == s.Config.KVDim()
}

// checkTokens reports the first token id outside the vocabulary; what
// names its index in the error ("position", "sequence").
func (s *Shard) checkTokens(toks []int32, what string) error {
	for i, id := range toks {
		if id < 0 || int(id) >= s.Config.NVocab {
			return fmt.Errorf("model: token id %d at %s %d is outside the vocabulary of %d", id, what, i, s.Config.NVocab)
		}
	}
	return nil
}

// input writes the batch's rows into x: the tokens' embeddings on the
// first shard, the hidden states from the previous one otherwise.
func (s *Shard) input(b Batch, x []float32) error {
	if !s.Range.First {
		copy(x, b.Hidden)
		return nil
	}
	d := s.Config.NEmbd
	scale := s.Config.embedScale()
	for i, id := range b.Tokens {
		row := x[i*d : (i+1)*d]
		if err := s.embedRow(id, row); err != nil {
			return err
		}
		if scale != 1 {
			for j := range row {
				row[j] *= scale
			}
		}
	}
	return nil
}

// head writes the logits of the m rows of x into logits.
func (s *Shard) head(a *arena, x []float32, m int, logits []float32) {
	cfg := s.Config
	d := cfg.NEmbd
	normed := a.h[:m*d]
	s.rows(a, opNorm, normed, x[:m*d], s.outNorm, d, m)
	s.matmul(a, normed, m, mmPart{s.output, logits[:m*cfg.NVocab]})
	if c := cfg.SoftCap; c > 0 {
		// ggml_scale, ggml_tanh, ggml_scale: each step rounded to float32.
		for i, v := range logits[:m*cfg.NVocab] {
			logits[i] = float32(math.Tanh(float64(v*(1/c)))) * c
		}
	}
}

func (s *Shard) embedRow(id int32, dst []float32) error {
	return dequantRow(s.k, s.embd, int(id), dst)
}

// seg is the rows of a batch that belong to one sequence: rows
// [row, row+n), at the positions after its cache's length.
type seg struct {
	c      *Cache
	row, n int
}

// block runs local block i over the n rows x (n × NEmbd) in place, the
// rows of the sequences segs. With lastOnly (one sequence) it stores every
// position's keys and values but updates only the last row of x.
func (s *Shard) block(i int, segs []seg, a *arena, x []float32, n int, lastOnly bool) {
	cfg := s.Config
	ly := &s.layers[i]
	d, kvd, vd, qd := cfg.NEmbd, cfg.KVDim(), cfg.VDim(), cfg.QDim()
	h := a.h[:n*d]
	q, k, v := a.q[:n*qd], a.k[:n*kvd], a.v[:n*vd]
	s.rows(a, opNorm, h, x, ly.attnNorm, d, n)
	if ly.mla.kvA != nil {
		s.mlaQKV(a, ly, h, n, q, k, v)
	} else {
		s.qkv(a, ly, h, n, q, k, v)
	}
	if s.rotK > 0 {
		rotate(q, s.rotK)
		rotate(k, s.rotK)
	}
	if s.rotV > 0 {
		rotate(v, s.rotV)
	}
	for _, sg := range segs {
		lo, hi := sg.row, sg.row+sg.n
		sg.c.store(s.k, a, i, sg.c.len, sg.n, k[lo*kvd:hi*kvd], v[lo*vd:hi*vd])
	}
	ad := cfg.AttnDim()
	if lastOnly {
		c, skip := segs[0].c, n-1
		x, q, n = x[skip*d:], q[skip*qd:], 1
		h = h[:d]
		s.attention(a, c, i, c.len+skip, q, a.att[:ad], 1)
	} else {
		for _, sg := range segs {
			lo, hi := sg.row, sg.row+sg.n
			s.attention(a, sg.c, i, sg.c.len, q[lo*qd:hi*qd], a.att[lo*ad:hi*ad], sg.n)
		}
	}
	att, o := a.att[:n*ad], a.o[:n*d]
	if s.rotV > 0 {
		rotate(att, s.rotV)
	}
	if ly.mla.vB != nil {
		att = s.mlaOut(a, ly, att, n)
	}
	s.matmul(a, att, n, mmPart{ly.o, o})
	if ly.oai.oBias != nil {
		for t := 0; t < n; t++ {
			addBias(o[t*d:(t+1)*d], ly.oai.oBias)
		}
	}
	if ly.attnPostNorm != nil {
		s.rows(a, opNorm, o, o, ly.attnPostNorm, d, n)
	}
	for j := range x {
		x[j] += o[j]
	}
	s.rows(a, opNorm, h, x, ly.ffnNorm, d, n)
	ffo := a.ffo[:n*d]
	if ly.router != nil {
		s.moeFFN(a, ly, h, n, ffo)
	} else {
		s.denseFFN(a, ly, h, n, ffo)
	}
	if ly.ffnPostNorm != nil {
		s.rows(a, opNorm, ffo, ffo, ly.ffnPostNorm, d, n)
	}
	for j := range x {
		x[j] += ffo[j]
	}
}

// qkv computes the rows' queries, keys and values with their biases, q/k
// norms, rotary positions and query factors.
func (s *Shard) qkv(a *arena, ly *layer, h []float32, n int, q, k, v []float32) {
	cfg := s.Config
	hd, kvd, qd := cfg.HeadDim, cfg.KVDim(), cfg.QDim()
	qScale := cfg.QScale
	rt := &a.rope
	if ly.window > 0 && cfg.RopeBaseSWA != 0 {
		rt = &a.ropeSWA // gemma3's local blocks
	}
	s.matmul(a, h, n, mmPart{ly.q, q}, mmPart{ly.k, k}, mmPart{ly.v, v})
	for t := 0; t < n; t++ {
		addBias(q[t*qd:(t+1)*qd], ly.qBias)
		addBias(k[t*kvd:(t+1)*kvd], ly.kBias)
		addBias(v[t*kvd:(t+1)*kvd], ly.vBias)
		if ly.noRope {
			// llama4's no-rope blocks: the queries times the
			// attention temperature of their position, the keys as
			// they are.
			if cfg.AttnTemp.Scale != 0 {
				if temp := a.qTemp[t]; temp != 1 {
					for e := range q[t*qd : (t+1)*qd] {
						q[t*qd+e] *= temp
					}
				}
			}
			continue
		}
		for h := 0; h < cfg.NHead; h++ {
			qh := q[t*qd+h*hd : t*qd+(h+1)*hd]
			if ly.qNorm != nil {
				rmsNorm(qh, qh, ly.qNorm, cfg.RMSEps)
			}
			rt.rope(qh, t, cfg.RopeNeoX)
			if ly.l2Norm {
				rmsNorm(qh, qh, nil, cfg.RMSEps)
			}
			if cfg.AttnTemp.Scale != 0 && cfg.NoRopeStep == 0 {
				// mistral3's temperature: a factor of the roped
				// queries, before the scores' 1/√HeadDim (llama4's is
				// its no-rope blocks').
				temp := a.qTemp[t]
				for e := range qh {
					qh[e] *= temp
				}
			}
			if qScale != 0 {
				for e := range qh {
					qh[e] *= qScale
				}
			}
		}
		for h := 0; h < cfg.NHeadKV; h++ {
			kh := k[t*kvd+h*hd : t*kvd+(h+1)*hd]
			if ly.kNorm != nil {
				rmsNorm(kh, kh, ly.kNorm, cfg.RMSEps)
			}
			rt.rope(kh, t, cfg.RopeNeoX)
			if ly.l2Norm {
				rmsNorm(kh, kh, nil, cfg.RMSEps)
			}
		}
	}
}

// denseFFN writes the gated feed-forward output of ly's gate, up and down
// matrices over the n rows h into out: SwiGLU, or gemma3's GELU.
func (s *Shard) denseFFN(a *arena, ly *layer, h []float32, n int, out []float32) {
	w := ly.gate.rows
	gate, up := a.gate[:n*w], a.up[:n*w]
	s.matmul(a, h, n, mmPart{ly.gate, gate}, mmPart{ly.up, up})
	act := opSwiGLU
	if s.Config.Gemma3 {
		act = opGeGLU
	}
	s.rows(a, act, gate, up, nil, w, n)
	s.matmul(a, gate, n, mmPart{ly.down, out})
}

func addBias(x, b []float32) {
	for i := range b {
		x[i] += b[i]
	}
}

// rowsOp is an elementwise operation on rows.
type rowsOp uint8

const (
	opNorm      rowsOp = iota // dst = rmsNorm(src)·w
	opSwiGLU                  // dst = silu(dst)·src
	opSwiGLUOAI               // dst = swigluOAI(dst, src): gpt-oss's clamped variant
	opGeGLU                   // dst = gelu(dst)·src, ggml's fp16-table GELU (geglu)
)

// gpt-oss's SwiGLU constants, which llama.cpp hard-wires
// (LLM_FFN_SWIGLU_OAI_MOE).
const (
	oaiAlpha = 1.702
	oaiLimit = 7.0
)

// swigluOAI is ggml's swiglu_oai: the gate clamped from above and the up
// projection on both sides at oaiLimit, gate·σ(α·gate)·(up+1).
func swigluOAI(gate, up []float32) {
	for i, g := range gate {
		x := min(g, oaiLimit)
		y := min(max(up[i], -oaiLimit), oaiLimit)
		glu := x / (1 + float32(math.Exp(float64(oaiAlpha*(-x)))))
		gate[i] = glu * (y + 1)
	}
}

// geluTable is ggml's table of GELU over every fp16 value (the tanh
// approximation, in float32, rounded to fp16), which its CPU backend
// evaluates GELU with (ggml_table_gelu_f16), held widened to float32 so a
// lookup costs one conversion.
var geluTable = sync.OnceValue(func() *[1 << 16]float32 {
	const (
		coefA       = float32(0.044715)
		sqrt2OverPi = float32(0.79788456080286535587989211986876)
	)
	var t [1 << 16]float32
	for i := range t {
		x := tensor.F16ToF32(uint16(i))
		g := float32(0.5) * x * (1 + float32(math.Tanh(float64(sqrt2OverPi*x*(1+coefA*x*x)))))
		t[i] = tensor.F16ToF32(tensor.F32ToF16(g))
	}
	return &t
})

// geglu replaces gate[i] with gelu(gate[i])·up[i] as ggml_vec_geglu_f32
// computes it (GGML_GELU_FP16): 0 at or below -10, the identity at or
// above 10, the fp16 table between.
func geglu(gate, up []float32) {
	t := geluTable()
	up = up[:len(gate)]
	for i, x := range gate {
		switch {
		case x <= -10:
			gate[i] = 0
		case x >= 10:
			gate[i] = x * up[i]
		default:
			gate[i] = t[tensor.F32ToF16(x)] * up[i]
		}
	}
}

// rowsJob applies a rowsOp to rows of width elements.
type rowsJob struct {
	k        tensor.Kernels
	op       rowsOp
	dst, src []float32
	w        []float32
	width    int
	eps      float32
}

func (j *rowsJob) do(_, lo, hi int) {
	for t := lo; t < hi; t++ {
		dst, src := j.dst[t*j.width:(t+1)*j.width], j.src[t*j.width:(t+1)*j.width]
		switch j.op {
		case opNorm:
			rmsNorm(dst, src, j.w, j.eps)
		case opSwiGLU:
			j.k.SwiGLU(dst, src)
		case opSwiGLUOAI:
			swigluOAI(dst, src)
		case opGeGLU:
			geglu(dst, src)
		}
	}
}

// rows runs op over n rows, in parallel when they are many.
func (s *Shard) rows(a *arena, op rowsOp, dst, src, w []float32, width, n int) {
	j := &a.rj
	*j = rowsJob{k: s.k, op: op, dst: dst, src: src, w: w, width: width, eps: s.Config.RMSEps}
	work := n * width
	if op != opNorm {
		work *= 16 // an exp per element
	}
	s.pool.run(j, n, 4, work)
	*j = rowsJob{}
}

// swaAlign is the position granularity at which a sliding-window block
// starts reading its cache: a multiple of every kernel's lane count and
// of DotF32TileChunk. (Shard.swaAlign is it but in a test that reads from
// position 0 to check that skipping changes no bit.)
const swaAlign = 64

// attnQueries is how many positions of one head an attention item scores
// at once: their keys are the same rows, so VecDotTile reads each key once
// for several queries.
const attnQueries = 6

// attnJob is causal scaled dot-product attention for n new positions
// starting at pos0, one item per (block of attnQueries positions, query
// head), reading keys and values [0, pos0+t] of the head's group from the
// cache. Every score is VecDot of its key and query (VecDotTile's
// contract) and every output element a DotF32Tile result, which depends
// only on its own weights, so nothing depends on how positions were
// grouped.
type attnJob struct {
	k      tensor.Kernels
	kc, vt []byte      // the block's cache
	typ    tensor.Type // its element type (F16, F32, Q8_0 or Q4_0)
	esz    int         // bytes an element (F16, F32)
	rb     int         // bytes of one head's row of keys
	rbv    int         // bytes of one head's row of values, when quantized
	vdeq   []float32   // per worker, one dequantized value row (quantized caches)
	// byGroup: one item per KV head, for all the query heads of its group
	// (a decode step over a quantized cache, whose value rows are then
	// dequantized once for the group instead of once per query head).
	byGroup      bool
	q, out       []float32 // n × QDim, n × AttnDim
	scores       []float32 // per worker, attnQueries rows of ss
	spans        []int     // per worker, attnQueries spans
	qh           []byte    // per worker, attnQueries queries of one head in fp16 (or Q8_0)
	pos0, n      int
	nHead, group int
	hd, qd, cap  int
	hdv, od      int // value head width, output row width
	ss           int // score row stride: the capacity padded as DotF32Tile reads rows
	scale        float32
	sinks        []float32 // gpt-oss: per-head sink logits in the softmax; nil otherwise
	window       int       // > 0: attend to the last window positions only
	chunk        int       // > 0: attend within the query's chunk of chunk positions only
	align        int       // swaAlign
}

// lowest is the first position the query at position p attends to: the
// start of its window or chunk, or 0.
func (j *attnJob) lowest(p int) int {
	switch {
	case j.window > 0:
		return max(0, p+1-j.window)
	case j.chunk > 0:
		return p / j.chunk * j.chunk
	}
	return 0
}

func (j *attnJob) do(w, lo, hi int) {
	hd, cp, es, ss := j.hd, j.cap, j.esz, j.ss
	for it := lo; it < hi; it++ {
		if j.byGroup {
			j.decodeGroup(w, it)
			continue
		}
		tb, h := it/j.nHead, it%j.nHead
		g := h / j.group
		t0 := tb * attnQueries
		t1 := min(t0+attnQueries, j.n)
		if j.typ.BlockElems() > 1 {
			j.quantized(w, h, g, t0, t1)
			continue
		}
		// The last position's keys cover the earlier ones'; the scores
		// of the later keys for earlier positions are not used.
		last := j.pos0 + t1
		// A sliding-window block reads keys and values from the first
		// position any query of the item sees, rounded down to
		// swaAlign: the kernels' sums then meet every position in the
		// same lane whatever the batch, and the positions skipped
		// would weigh 0.
		first := j.lowest(j.pos0+t0) / j.align * j.align
		sc := j.scores[w*attnQueries*ss : (w+1)*attnQueries*ss]
		keys := j.kc[es*(g*cp+first)*hd : es*(g*cp+last)*hd]
		qs, qStride := tensor.F32Bytes(j.q[t0*j.qd+h*hd:(t1-1)*j.qd+(h+1)*hd]), 4*j.qd
		if j.typ == tensor.F16 {
			// The queries meet fp16 keys in fp16, as in llama.cpp's
			// attention over its fp16 cache.
			qh := j.qh[w*attnQueries*2*hd : (w+1)*attnQueries*2*hd]
			for t := t0; t < t1; t++ {
				q := j.q[t*j.qd+h*hd : t*j.qd+(h+1)*hd]
				if err := j.k.QuantizeAct(tensor.F16, q, qh[(t-t0)*2*hd:(t-t0+1)*2*hd]); err != nil {
					panic(err) // sizes are fixed at load time; an error here is a bug
				}
			}
			qs, qStride = qh[:(t1-t0)*2*hd], 2*hd
		}
		j.k.VecDotTile(j.typ, keys, es*hd, last-first, qs, qStride, t1-t0, hd, sc, ss)
		spans := j.spans[w*attnQueries : w*attnQueries+t1-t0]
		for t := t0; t < t1; t++ {
			span := j.pos0 + t + 1 - first
			j.softmax(sc[(t-t0)*ss:(t-t0)*ss+span], h, j.lowest(j.pos0+t)-first)
			spans[t-t0] = span
		}
		// Row e of the transposed values holds element e of every
		// position; the weights stay float32.
		hdv := j.hdv
		vals := j.vt[es*(g*hdv*cp+first) : es*(g*hdv*cp+(hdv-1)*cp+tensor.DotF32TilePad(last))]
		j.k.DotF32Tile(j.typ, vals, es*cp, hdv, sc, ss, spans, j.out[t0*j.od+h*hdv:], j.od)
	}
}

// softmax turns the scaled scores of query head h against the keys of
// consecutive positions into weights (the row's last key is the query's
// own position, its key lo the first it attends to). A sliding-window or
// chunked block's keys before lo weigh exactly 0, and a head with a sink
// logit (gpt-oss) gives it its share.
func (j *attnJob) softmax(row []float32, h, lo int) {
	if j.sinks == nil && lo == 0 {
		softmaxScaled(j.k, row, j.scale)
		return
	}
	clear(row[:lo])
	sink := float32(math.Inf(-1))
	if j.sinks != nil {
		sink = j.sinks[h]
	}
	softmaxSink(j.k, row[lo:], j.scale, sink)
}

// quantized is one item of attention over a block-quantized cache, as
// llama.cpp's CPU flash attention computes it over its quantized cache:
// the queries are rounded to Q8_0 (the keys' vec-dot type) for integer dot
// products with the keys, and each value row is dequantized and added in
// float32 with its softmax weight.
func (j *attnJob) quantized(w, h, g, t0, t1 int) {
	hd, hdv, cp, rb, rbv, ss := j.hd, j.hdv, j.cap, j.rb, j.rbv, j.ss
	last := j.pos0 + t1
	sc := j.scores[w*attnQueries*ss : (w+1)*attnQueries*ss]
	n, _ := tensor.RowBytes(tensor.VecDotType(j.typ), int64(hd)) // Q8_0: fewer bytes than fp16
	qrb := int(n)
	qh := j.qh[w*attnQueries*2*hd : w*attnQueries*2*hd+(t1-t0)*qrb]
	for t := t0; t < t1; t++ {
		q := j.q[t*j.qd+h*hd : t*j.qd+(h+1)*hd]
		if err := j.k.QuantizeAct(j.typ, q, qh[(t-t0)*qrb:(t-t0+1)*qrb]); err != nil {
			panic(err) // sizes are fixed at load time; an error here is a bug
		}
	}
	j.k.VecDotTile(j.typ, j.kc[rb*g*cp:rb*(g*cp+last)], rb, last, qh, qrb, t1-t0, hd, sc, ss)
	for t := t0; t < t1; t++ {
		j.softmax(sc[(t-t0)*ss:(t-t0)*ss+j.pos0+t+1], h, j.lowest(j.pos0+t))
		clear(j.out[t*j.od+h*hdv : t*j.od+(h+1)*hdv])
	}
	vrow := j.vdeq[w*hdv : (w+1)*hdv]
	for p := 0; p < last; p++ {
		dequantCacheRow(j.typ, j.vt[rbv*(g*cp+p):rbv*(g*cp+p+1)], vrow)
		// Position p is seen by the queries at positions ≥ p.
		for t := max(t0, p-j.pos0); t < t1; t++ {
			wt := sc[(t-t0)*ss+p]
			out := j.out[t*j.od+h*hdv : t*j.od+(h+1)*hdv]
			for e, v := range vrow {
				out[e] += wt * v
			}
		}
	}
}

// decodeGroup is one item of a decode step's attention over a quantized
// cache: the query heads of KV head g, each computed as quantized computes
// it (the same scores, softmax and sums in the same order), with each
// value row dequantized once for all of them.
func (j *attnJob) decodeGroup(w, g int) {
	hd, hdv, cp, rb, rbv, ss := j.hd, j.hdv, j.cap, j.rb, j.rbv, j.ss
	last := j.pos0 + 1
	heads := j.group
	sc := j.scores[w*attnQueries*ss : (w+1)*attnQueries*ss]
	n, _ := tensor.RowBytes(tensor.VecDotType(j.typ), int64(hd))
	qrb := int(n)
	qh := j.qh[w*attnQueries*2*hd : w*attnQueries*2*hd+heads*qrb]
	for i := range heads {
		h := g*heads + i
		if err := j.k.QuantizeAct(j.typ, j.q[h*hd:(h+1)*hd], qh[i*qrb:(i+1)*qrb]); err != nil {
			panic(err) // sizes are fixed at load time; an error here is a bug
		}
	}
	j.k.VecDotTile(j.typ, j.kc[rb*g*cp:rb*(g*cp+last)], rb, last, qh, qrb, heads, hd, sc, ss)
	out := j.out[g*heads*hdv : (g+1)*heads*hdv]
	for i := range heads {
		j.softmax(sc[i*ss:i*ss+last], g*heads+i, j.lowest(j.pos0))
	}
	clear(out)
	vrow := j.vdeq[w*hdv : (w+1)*hdv]
	for p := 0; p < last; p++ {
		dequantCacheRow(j.typ, j.vt[rbv*(g*cp+p):rbv*(g*cp+p+1)], vrow)
		for i := range heads {
			wt, o := sc[i*ss+p], out[i*hdv:(i+1)*hdv]
			for e, v := range vrow {
				o[e] += wt * v
			}
		}
	}
}

// dequantCacheRow expands a Q8_0 or Q4_0 row as tensor.Dequantize does
// (q·d), without its checks: the sizes are the cache's.
func dequantCacheRow(typ tensor.Type, row []byte, dst []float32) {
	if typ == tensor.Q8_0 {
		for b := 0; b < len(dst)/32; b++ {
			blk := row[b*34 : b*34+34]
			d := tensor.F16ToF32(uint16(blk[0]) | uint16(blk[1])<<8)
			y := dst[b*32 : b*32+32]
			for i, q := range blk[2:34] {
				y[i] = float32(int8(q)) * d
			}
		}
		return
	}
	for b := 0; b < len(dst)/32; b++ {
		blk := row[b*18 : b*18+18]
		d := tensor.F16ToF32(uint16(blk[0]) | uint16(blk[1])<<8)
		y := dst[b*32 : b*32+32]
		for i, q := range blk[2:18] {
			y[i] = float32(int(q&0xf)-8) * d
			y[i+16] = float32(int(q>>4)-8) * d
		}
	}
}

// attention computes the attention of block i for the n positions from
// pos0 whose queries are q, after their keys and values were stored in c.
func (s *Shard) attention(a *arena, c *Cache, i, pos0 int, q, out []float32, n int) {
	cfg := s.Config
	j := &a.at
	*j = attnJob{
		k: s.k, kc: c.k[i], vt: c.vt[i], typ: c.typ, esz: c.esz, rb: c.rb, rbv: c.rbv, vdeq: a.vdeq,
		q: q, out: out, scores: a.scores, spans: a.spans, qh: a.qh,
		pos0: pos0, n: n, nHead: cfg.NHead, group: cfg.NHead / cfg.NHeadKV,
		hd: cfg.HeadDim, qd: cfg.QDim(), hdv: cfg.vHead(), od: cfg.AttnDim(), cap: c.cap, ss: tensor.DotF32TilePad(c.cap),
		scale: cfg.attnScale(), sinks: s.layers[i].oai.sinks, window: s.layers[i].window, align: s.swaAlign,
	}
	if s.layers[i].chunked {
		j.chunk = cfg.ChunkSize
	}
	span := pos0 + n
	if n == 1 && c.quantized() && j.group <= attnQueries {
		j.byGroup = true
		s.pool.run(j, cfg.NHeadKV, 1, cfg.NHead*span*cfg.HeadDim*2)
		*j = attnJob{}
		return
	}
	s.pool.run(j, (n+attnQueries-1)/attnQueries*cfg.NHead, 1, n*cfg.NHead*span*cfg.HeadDim*2)
	*j = attnJob{}
}
