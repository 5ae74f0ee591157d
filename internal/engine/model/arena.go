package model

import "github.com/skulk/skulk/internal/engine/tensor"

// ubatch is the most positions one pass through the blocks processes; a
// longer batch runs as consecutive ubatches, which gives the same results
// (no position's computation depends on the batch it arrives in) and bounds
// the scratch memory.
const ubatch = 512

// arena is a Cache's scratch memory: the intermediate buffers of a forward
// pass and the descriptors of its parallel jobs. It grows to the largest
// batch seen and is then reused, so a decode step allocates nothing.
type arena struct {
	x      []float32 // the whole batch's hidden states: the Result.Hidden rows
	logits []float32 // the Result.Logits rows

	// Per-ubatch buffers, rows of their width.
	h, q, k, v, att, o, gate, up, ffo []float32
	act                               []byte    // activations in a vec-dot type
	scores                            []float32 // per worker: attnQueries rows of DotF32TilePad(cache capacity)
	spans                             []int     // per worker: attnQueries spans
	qh                                []byte    // per worker: attnQueries fp16 queries of one head
	vrow                              []byte    // one head's value row in the cache's element type
	vcol                              []float32 // one value element of every row of a ubatch
	vdeq                              []float32 // per worker: one dequantized value row of a quantized cache
	pos                               []int     // each row's position in its sequence
	rope                              ropeTable
	ropeSWA                           ropeTable // the sliding-window blocks' (Config.RopeBaseSWA)
	qTemp                             []float32 // each row's query temperature (Config.AttnTemp)

	// Mixture-of-experts buffers (empty for a dense model): router logits
	// and choices per token, then the n·k (token, expert) pairs grouped by
	// expert (moeGroups).
	route, selW, xe, egate, eup, edown []float32
	shared                             []float32 // the shared experts' output
	routeSc                            []float32 // one token's biased router scores

	// Latent attention buffers (empty without MLA): the full queries, the
	// query latent, the key/value latent with the rotated key, per-head
	// grouped inputs and outputs of attn_k_b / attn_v_b, the expanded
	// attention output.
	mq, mqa, mkv, mx, my, mo []float32
	mstart                   []int
	sel                      []int32
	estart, rowOf, epair     []int
	eact                     []byte
	etasks                   []expertTask

	mm matmulJob
	qj quantJob
	at attnJob
	rj rowsJob
	ej expertJob
}

// grow returns buf resliced to n elements, reallocated if it is too small.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// prepare sizes the arena for a batch of n positions of which nLogits get
// logits, in caches of at most capacity positions.
func (a *arena) prepare(s *Shard, capacity, n, nLogits int) {
	cfg := s.Config
	m := min(n, ubatch)
	a.x = grow(a.x, n*cfg.NEmbd)
	a.logits = grow(a.logits, nLogits*cfg.NVocab)
	a.h = grow(a.h, m*cfg.NEmbd)
	a.q = grow(a.q, m*cfg.QDim())
	a.k = grow(a.k, m*cfg.KVDim())
	a.v = grow(a.v, m*cfg.VDim())
	a.att = grow(a.att, m*cfg.AttnDim())
	a.o = grow(a.o, m*cfg.NEmbd)
	ff := max(cfg.NFF, cfg.MoE.NShared*cfg.MoE.NFF)
	a.gate = grow(a.gate, m*ff)
	a.up = grow(a.up, m*ff)
	a.ffo = grow(a.ffo, m*cfg.NEmbd)
	a.act = grow(a.act, m*s.actRowBytes)
	a.scores = grow(a.scores, s.pool.n*attnQueries*tensor.DotF32TilePad(capacity))
	a.spans = grow(a.spans, s.pool.n*attnQueries)
	a.qh = grow(a.qh, s.pool.n*attnQueries*2*cfg.HeadDim)
	a.vrow = grow(a.vrow, 4*cfg.vHead())
	a.vdeq = grow(a.vdeq, s.pool.n*cfg.vHead())
	a.pos = grow(a.pos, m)
	a.vcol = grow(a.vcol, m)
	grouped := 0 // rows an expert matmul may group
	if ml := cfg.MLA; ml.KVLoraRank > 0 {
		nh := cfg.NHead
		a.mq = grow(a.mq, m*nh*ml.KeyLen)
		a.mqa = grow(a.mqa, m*ml.QLoraRank)
		a.mkv = grow(a.mkv, m*(ml.KVLoraRank+ml.RopeDim))
		a.mx = grow(a.mx, m*nh*max(ml.nope(), ml.KVLoraRank))
		a.my = grow(a.my, m*nh*max(ml.KVLoraRank, ml.ValueLen))
		a.mo = grow(a.mo, m*nh*ml.ValueLen)
		a.mstart = grow(a.mstart, nh+1)
		grouped = m * nh
	}
	if mc := cfg.MoE; mc.NExpert > 0 {
		grouped = max(grouped, m*mc.NExpertUsed)
	}
	a.eact = grow(a.eact, grouped*s.actRowBytes)
	if mc := cfg.MoE; mc.NExpert > 0 {
		pairs := m * mc.NExpertUsed
		a.route = grow(a.route, m*mc.NExpert)
		a.routeSc = grow(a.routeSc, 2*mc.NExpert)
		a.sel = grow(a.sel, pairs)
		a.selW = grow(a.selW, pairs)
		a.estart = grow(a.estart, mc.NExpert+1)
		a.rowOf = grow(a.rowOf, pairs)
		a.epair = grow(a.epair, pairs)
		if s.expertFloatActs() || mc.Gating == GatingSigmoidInput {
			a.xe = grow(a.xe, pairs*cfg.NEmbd)
		}
		a.egate = grow(a.egate, pairs*mc.NFF)
		a.eup = grow(a.eup, pairs*mc.NFF)
		a.edown = grow(a.edown, pairs*cfg.NEmbd)
		a.shared = grow(a.shared, m*cfg.NEmbd)
	}
	a.rope.half = cfg.RopeDim / 2
	a.rope.cos = grow(a.rope.cos, m*a.rope.half)
	a.rope.sin = grow(a.rope.sin, m*a.rope.half)
	if cfg.RopeBaseSWA != 0 {
		a.ropeSWA.half = a.rope.half
		a.ropeSWA.cos = grow(a.ropeSWA.cos, m*a.rope.half)
		a.ropeSWA.sin = grow(a.ropeSWA.sin, m*a.rope.half)
	}
	if cfg.AttnTemp.Scale != 0 {
		a.qTemp = grow(a.qTemp, m)
	}
}
