package model

import (
	"math"
	"slices"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// Gating is how a router turns its logits into expert probabilities.
type Gating uint8

const (
	GatingSoftmax Gating = iota + 1 // qwen3moe, deepseek2 v2
	GatingSigmoid                   // glm4moe, deepseek2 v3
	// GatingSoftmaxWeight (gpt-oss) chooses the top-k raw logits and
	// softmaxes only the chosen ones into their weights.
	GatingSoftmaxWeight
	// GatingSigmoidInput (llama4) chooses the top-k raw logits and weighs
	// each chosen expert by the sigmoid of its logit, applied to the
	// expert's input rather than its output (llama.cpp's
	// weight_before_ffn): the expert's FFN sees the scaled hidden state.
	GatingSigmoidInput
)

// MoE is the mixture-of-experts shape of a model's feed-forward blocks:
// each token's hidden state is routed to NExpertUsed of NExpert expert FFNs
// of width NFF, whose outputs are summed with the router's weights. It
// follows llama.cpp's build_moe_ffn: probabilities from the router logits,
// top-k of them (lowest id first among equals), optionally renormalised to
// sum to one, then scaled.
type MoE struct {
	NExpert     int
	NExpertUsed int
	NFF         int // width of one expert's FFN
	Gating      Gating
	NormTopK    bool    // divide the selected weights by their sum
	Scale       float32 // multiply the weights by this; 0 means 1
	// NShared experts of width NFF run on every token (as one FFN of
	// width NShared·NFF), added to the routed ones' output.
	NShared int
	// LeadingDense is the number of first blocks with a dense FFN of
	// Config.NFF instead of experts.
	LeadingDense int
	// NextN is the number of multi-token-prediction blocks stored after
	// the trunk (block_count includes them); they are not run.
	NextN int
	// Interleave > 0: only the blocks b with (b+1)%Interleave == 0 route
	// through experts, the others are dense (llama4's
	// interleave_moe_layer_step).
	Interleave int
	// Grouped selection (DeepSeek V3): the experts form NGroup groups;
	// only the NGroupUsed groups with the best sum of their top two
	// scores compete.
	NGroup, NGroupUsed int
}

// moeBlock says whether block b routes its FFN through experts.
func (c Config) moeBlock(b int) bool {
	m := c.MoE
	return m.NExpert > 0 && b >= m.LeadingDense && (m.Interleave <= 0 || (b+1)%m.Interleave == 0)
}

// maxExperts is llama.cpp's LLAMA_MAX_EXPERTS.
const maxExperts = 1024

// experts is a 3-D expert tensor: n matrices of rows × cols, one after the
// other in the file, each in the layout of a 2-D matrix.
type experts struct {
	all  matrix // n·rows rows: expert e holds rows [e·rows, (e+1)·rows)
	n    int
	rows int
}

// expert returns expert e as a matrix aliasing the file's data.
func (x *experts) expert(e int) matrix {
	m := x.all
	m.rows = x.rows
	m.data = x.all.data[e*x.rows*m.rowBytes : (e+1)*x.rows*m.rowBytes]
	return m
}

// route selects each of n tokens' experts from the router logits (n ×
// NExpert, turned into probabilities in place) and writes the chosen ids and
// their weights into sel and w (n × NExpertUsed, in llama.cpp's order: by
// probability, descending).
//
// A selection bias (exp_probs_b: glm4moe, DeepSeek V3) shifts which experts are chosen
// but not their weights; sc is scratch for the biased scores.
func (s *Shard) route(logits []float32, bias []float32, n int, sel []int32, w, sc []float32) {
	mc := s.Config.MoE
	ne, k := mc.NExpert, mc.NExpertUsed
	for t := 0; t < n; t++ {
		p := logits[t*ne : (t+1)*ne]
		switch mc.Gating {
		case GatingSoftmaxWeight, GatingSigmoidInput:
			// The raw logits choose; their softmax or sigmoid is
			// taken below.
		case GatingSigmoid:
			for i, v := range p {
				p[i] = 1 / (1 + float32(math.Exp(float64(-v))))
			}
		default:
			softmaxScaled(s.k, p, 1)
		}
		ids := sel[t*k : (t+1)*k]
		score := p
		if bias != nil || mc.NGroup > 1 {
			score = sc[:ne]
			copy(score, p)
			if bias != nil {
				for i, b := range bias {
					score[i] += b
				}
			}
			if mc.NGroup > 1 {
				maskGroups(score, mc.NGroup, mc.NGroupUsed, sc[ne:])
			}
		}
		topK(score, ids)
		ws := w[t*k : (t+1)*k]
		for i, e := range ids {
			ws[i] = p[e]
		}
		switch mc.Gating {
		case GatingSoftmaxWeight:
			softmaxScaled(s.k, ws, 1)
		case GatingSigmoidInput:
			for i, v := range ws {
				ws[i] = 1 / (1 + float32(math.Exp(float64(-v))))
			}
		}
		if mc.NormTopK {
			// ggml_sum_rows sums in double; the sum is clamped to the
			// smallest normal fp16 against a division by zero.
			var sum float64
			for _, v := range ws {
				sum += float64(v)
			}
			d := max(float32(sum), 6.103515625e-5)
			for i := range ws {
				ws[i] /= d
			}
		}
		if mc.Scale != 0 && mc.Scale != 1 {
			for i := range ws {
				ws[i] *= mc.Scale
			}
		}
	}
}

// maskGroups sets the scores of every expert outside the used best groups
// to −Inf: a group's score is the sum of its two best experts' (llama.cpp's
// grouped selection, DeepSeek V3's). scratch holds at least groups
// values.
func maskGroups(score []float32, groups, used int, scratch []float32) {
	per := len(score) / groups
	gs := scratch[:groups]
	var top2 [2]int32
	for g := range gs {
		topK(score[g*per:(g+1)*per], top2[:])
		gs[g] = float32(float64(score[g*per+int(top2[0])]) + float64(score[g*per+int(top2[1])]))
	}
	var keepBuf [16]int32
	keep := keepBuf[:0]
	if used > len(keepBuf) {
		keep = make([]int32, 0, used)
	}
	keep = keep[:used]
	topK(gs, keep)
	for g := range gs {
		if !slices.Contains(keep, int32(g)) {
			for i := g * per; i < (g+1)*per; i++ {
				score[i] = float32(math.Inf(-1))
			}
		}
	}
}

// topK writes the indices of the len(ids) largest values of p into ids,
// largest first, the lower index first among equal values.
func topK(p []float32, ids []int32) {
	n := 0
	for i, v := range p {
		// Insertion into the sorted prefix: k is small (≤ 16 in the
		// models this runs) and p a few hundred values.
		if n == len(ids) && !(v > p[ids[n-1]]) {
			continue
		}
		j := min(n, len(ids)-1)
		for j > 0 && v > p[ids[j-1]] {
			ids[j] = ids[j-1]
			j--
		}
		ids[j] = int32(i)
		n = min(n+1, len(ids))
	}
}

// moeGroups orders the n·k (token, slot) pairs of a batch by expert, so that
// each expert's rows are adjacent: row r of the grouped buffers is pair
// pair[r], and pair i = t·k+slot is row rowOf[i]. start[e] is expert e's
// first row (start has NExpert+1 entries).
func moeGroups(sel []int32, nExpert int, start, rowOf, pair []int) {
	clear(start)
	for _, e := range sel {
		start[e+1]++
	}
	for e := 0; e < nExpert; e++ {
		start[e+1] += start[e]
	}
	next := start[:nExpert] // advanced as rows are placed, then restored
	for i, e := range sel {
		r := next[e]
		next[e]++
		rowOf[i] = r
		pair[r] = i
	}
	// next[e] now holds the end of expert e, which is the start of e+1:
	// shift back.
	copy(start[1:], next)
	start[0] = 0
}

// moeFFN computes the mixture-of-experts feed-forward output of the n
// normalised rows h into out (n × NEmbd). Each expert's weights are read
// once for all the batch's tokens routed to it; a decode step reads only the
// selected experts. Every output element is one VecDot of a weight row and
// its token's activations, so it depends on nothing but the token.
func (s *Shard) moeFFN(a *arena, ly *layer, h []float32, n int, out []float32) {
	cfg := s.Config
	mc := cfg.MoE
	d, k, nff := cfg.NEmbd, mc.NExpertUsed, mc.NFF
	logits := a.route[:n*mc.NExpert]
	s.matmul(a, h, n, mmPart{ly.router, logits})
	if ly.oai.routerBias != nil {
		for t := 0; t < n; t++ {
			addBias(logits[t*mc.NExpert:(t+1)*mc.NExpert], ly.oai.routerBias)
		}
	}
	sel, w := a.sel[:n*k], a.selW[:n*k]
	s.route(logits, ly.routerBias, n, sel, w, a.routeSc)
	rows := n * k
	start, rowOf, pair := a.estart[:mc.NExpert+1], a.rowOf[:rows], a.epair[:rows]
	moeGroups(sel, mc.NExpert, start, rowOf, pair)
	// The grouped rows: each pair's expert's gate (then its activation),
	// up and down outputs.
	gate, up, down := a.egate[:rows*nff], a.eup[:rows*nff], a.edown[:rows*d]
	inputWeighted := mc.Gating == GatingSigmoidInput
	var inW []float32
	if inputWeighted {
		inW = w
	}
	s.expertGateUp(a, ly, h, n, pair, start, inW, gate, up)
	s.expertMatmul(a, gate, nff, start, ly.downExps, ly.oai.downExpsBias, down)
	// llama.cpp weights each expert's output (one rounding) and sums the
	// experts in selection order; llama4's weights were applied to the
	// inputs, and its outputs are summed as they are.
	for t := 0; t < n; t++ {
		o := out[t*d : (t+1)*d]
		for slot := 0; slot < k; slot++ {
			r := rowOf[t*k+slot]
			wt := w[t*k+slot]
			if inputWeighted {
				wt = 1 // v·1 is v: the sum is the outputs' own
			}
			src := down[r*d : (r+1)*d]
			if slot == 0 {
				for j, v := range src {
					o[j] = v * wt
				}
				continue
			}
			for j, v := range src {
				o[j] += v * wt
			}
		}
	}
	if ly.gate != nil {
		// Shared experts see every token; llama.cpp adds their output to
		// the routed experts' sum.
		sh := a.shared[:n*d]
		s.denseFFN(a, ly, h, n, sh)
		for j := range out[:n*d] {
			out[j] += sh[j]
		}
	}
}

// expertTask is one item of an expert matmul: weight rows [r0, r1) of
// each matrix of expert e against the grouped activation rows [t0, t1).
type expertTask struct {
	e      int
	r0, r1 int
	t0, t1 int
}

// expertJob multiplies each expert's grouped activation rows by one or two
// of its matrices. With two (gate and up, which read the same
// activations), each item also applies the gated activation glu to its
// rows of the two outputs while they are in cache: every element of it
// depends only on the gate and up values at its place, so cutting the rows
// into items changes no bit, and no second pass over the rows is needed.
type expertJob struct {
	k      tensor.Kernels
	nm     int // matrices: 1, or 2 for gate and up
	mats   [2]*experts
	outs   [2][]float32
	bias   [2][]float32 // per-expert bias rows (gpt-oss), nil for none
	glu    rowsOp       // opSwiGLU or opSwiGLUOAI, with two matrices
	tasks  []expertTask
	x      []float32 // F32 activations (dotF32)
	cols   int
	act    []byte
	ab     int
	dotF32 bool
}

func (j *expertJob) do(_, lo, hi int) {
	for it := lo; it < hi; it++ {
		tk := j.tasks[it]
		for mi := range j.nm {
			m := j.mats[mi].expert(tk.e)
			out := j.outs[mi]
			m.block(j.k, tk.r0, tk.r1, tk.t0, tk.t1, j.dotF32, j.x, j.act, j.ab, out)
			if b := j.bias[mi]; b != nil {
				// ggml_add_id: expert e's bias row.
				be := b[tk.e*m.rows+tk.r0 : tk.e*m.rows+tk.r1]
				for t := tk.t0; t < tk.t1; t++ {
					addBias(out[t*m.rows+tk.r0:t*m.rows+tk.r1], be)
				}
			}
		}
		if j.nm == 2 {
			w := j.mats[0].rows
			for t := tk.t0; t < tk.t1; t++ {
				g, u := j.outs[0][t*w+tk.r0:t*w+tk.r1], j.outs[1][t*w+tk.r0:t*w+tk.r1]
				if j.glu == opSwiGLUOAI {
					swigluOAI(g, u)
				} else {
					j.k.SwiGLU(g, u)
				}
			}
		}
	}
}

// expertGateUp computes, for every grouped row r (pair pair[r] of the n
// rows h, routed to the expert whose rows [start[e], start[e+1]) hold r),
// gate[r] = glu(h·gateᵀ + bias, h·upᵀ + bias) with that expert's gate and
// up matrices, and leaves up[r] as its up projection. Each token's
// activations are rounded to the vec-dot type once, not once per expert it
// was routed to, and their bytes gathered into the grouped order. With
// inW (llama4), pair i's input is token i/k's row times inW[i] instead,
// each such row rounded to the vec-dot type on its own.
func (s *Shard) expertGateUp(a *arena, ly *layer, h []float32, n int, pair, start []int, inW []float32, gate, up []float32) {
	d, k := s.Config.NEmbd, s.Config.MoE.NExpertUsed
	rows := len(pair)
	j := &a.ej
	*j = expertJob{k: s.k, nm: 2, cols: d, glu: opSwiGLU, tasks: a.etasks[:0]}
	if s.Config.OAI {
		j.glu = opSwiGLUOAI
	}
	j.mats = [2]*experts{ly.gateExps, ly.upExps}
	j.outs = [2][]float32{gate, up}
	j.bias = [2][]float32{ly.oai.gateExpsBias, ly.oai.upExpsBias}
	mat := &ly.gateExps.all
	j.dotF32 = s.usesDotF32(mat)
	switch {
	case j.dotF32 || mat.typ == tensor.F32 || inW != nil: // expertFloatActs, or weighted inputs
		xe := a.xe[:rows*d]
		for r, i := range pair {
			t := i / k
			row := xe[r*d : (r+1)*d]
			if inW != nil {
				// ggml_mul of the repeated rows by the weights.
				wt := inW[i]
				for c, v := range h[t*d : (t+1)*d] {
					row[c] = v * wt
				}
			} else {
				copy(row, h[t*d:(t+1)*d])
			}
		}
		j.x = xe
		switch {
		case j.dotF32:
		case mat.typ == tensor.F32:
			j.ab, j.act = 4*d, tensor.F32Bytes(xe)
		default:
			ab, _ := tensor.RowBytes(tensor.VecDotType(mat.typ), int64(d))
			j.ab = int(ab)
			j.act = a.eact[:rows*j.ab]
			q := &a.qj
			*q = quantJob{k: s.k, typ: mat.typ, x: xe, cols: d, act: j.act, ab: j.ab}
			s.pool.run(q, rows, 8, rows*d)
			*q = quantJob{}
		}
	default:
		ab, _ := tensor.RowBytes(tensor.VecDotType(mat.typ), int64(d))
		j.ab = int(ab)
		act := a.act[:n*j.ab]
		q := &a.qj
		*q = quantJob{k: s.k, typ: mat.typ, x: h, cols: d, act: act, ab: j.ab}
		s.pool.run(q, n, 8, n*d)
		*q = quantJob{}
		j.act = a.eact[:rows*j.ab]
		for r, i := range pair {
			t := i / k
			copy(j.act[r*j.ab:(r+1)*j.ab], act[t*j.ab:(t+1)*j.ab])
		}
	}
	s.runExperts(a, start)
}

// expertFloatActs says whether the expert gate and up matmuls read float
// activations, gathered into a.xe a row per (token, expert) pair, rather
// than each token's activations rounded once to the vec-dot type.
func (s *Shard) expertFloatActs() bool {
	for i := range s.layers {
		if g := s.layers[i].gateExps; g != nil && (s.usesDotF32(&g.all) || g.all.typ == tensor.F32) {
			return true
		}
	}
	return false
}

// expertMatmul computes, for every expert e and grouped row r in [start[e],
// start[e+1]), out[r] = x[r]·(expert e of m)ᵀ, plus expert e's row of bias
// when bias is not nil. The activations are rounded to the weights'
// vec-dot type as in matmul.
func (s *Shard) expertMatmul(a *arena, x []float32, cols int, start []int, m *experts, bias, out []float32) {
	rows := start[len(start)-1]
	j := &a.ej
	*j = expertJob{k: s.k, nm: 1, x: x, cols: cols, tasks: a.etasks[:0]}
	j.mats[0], j.outs[0], j.bias[0] = m, out, bias
	mat := &m.all
	j.dotF32 = s.usesDotF32(mat)
	switch {
	case j.dotF32:
	case mat.typ == tensor.F32:
		j.ab, j.act = 4*cols, tensor.F32Bytes(x[:rows*cols])
	default:
		at := tensor.VecDotType(mat.typ)
		ab, _ := tensor.RowBytes(at, int64(cols))
		j.ab = int(ab)
		j.act = a.eact[:rows*j.ab]
		q := &a.qj
		*q = quantJob{k: s.k, typ: mat.typ, x: x, cols: cols, act: j.act, ab: j.ab}
		s.pool.run(q, rows, 8, rows*cols)
		*q = quantJob{}
	}
	s.runExperts(a, start)
}

// runExperts cuts the expert job a.ej, whose matrices, outputs and
// activations are set, into tasks and runs them. A decode step's tasks
// are decodeRowChunk runs of rows of each selected expert (each token its
// own expert here), a prefill's tiles of weight rows against up to
// prefillTokens of the expert's grouped rows.
func (s *Shard) runExperts(a *arena, start []int) {
	j := &a.ej
	ex := j.mats[0]
	work := 0
	for e := 0; e+1 < len(start); e++ {
		t0, t1 := start[e], start[e+1]
		if t0 == t1 {
			continue
		}
		em := ex.expert(e)
		tokTile, rc := 1, s.rowChunk(&em, t1-t0 > 1)
		if t1-t0 > 1 {
			tokTile = prefillTokens
		}
		for tt := t0; tt < t1; tt += tokTile {
			for r := 0; r < ex.rows; r += rc {
				j.tasks = append(j.tasks, expertTask{e: e, r0: r, r1: min(r+rc, ex.rows), t0: tt, t1: min(tt+tokTile, t1)})
			}
		}
		work += j.nm * ex.rows * j.cols * (t1 - t0)
	}
	a.etasks = j.tasks[:0] // keep the grown backing array
	s.pool.run(j, len(j.tasks), 1, work)
	*j = expertJob{}
}
