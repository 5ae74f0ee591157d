package model

// MLA is multi-head latent attention (deepseek2): keys and values are
// projected through a shared latent of KVLoraRank values per position,
// which is all the cache holds (plus RopeDim rotated key values). The
// query of each head is absorbed into the latent space (attn_k_b), so the
// attention runs as one key/value head of KVLoraRank+RopeDim keys and
// KVLoraRank values, and its per-head output is expanded by attn_v_b. This
// is llama.cpp's MLA path for files with split attn_k_b/attn_v_b tensors.
type MLA struct {
	QLoraRank  int // 0: queries come straight from attn_q (the "lite" models)
	KVLoraRank int
	KeyLen     int // per-head query/key width before absorption: nope + rope
	ValueLen   int // per-head value width after expansion
	RopeDim    int // the rotated tail of each query head and the shared key
}

// nope is the unrotated part of a query head.
func (m MLA) nope() int { return m.KeyLen - m.RopeDim }

// mlaLayer is a block's latent attention weights.
type mlaLayer struct {
	qA, qB  *matrix // query down- and up-projection (nil in a lite model: layer.q)
	qANorm  []float32
	kvA     *matrix // attn_kv_a_mqa: the latent and the rotated key
	kvANorm []float32
	kB      *experts // per head: the latent × nope key projection, applied to the query
	vB      *experts // per head: the value expansion from the latent
}

// mlaQKV computes the rows' absorbed queries q (NHead × (KVLoraRank +
// RopeDim)), keys k (the normalised latent and the rotated shared key) and
// values v (the normalised latent), as llama.cpp's deepseek2 graph does.
func (s *Shard) mlaQKV(a *arena, ly *layer, h []float32, n int, q, k, v []float32) {
	cfg := s.Config
	ml := cfg.MLA
	nh, kl, kvr, rd, nope := cfg.NHead, ml.KeyLen, ml.KVLoraRank, ml.RopeDim, ml.nope()
	qw, kw := nh*kl, kvr+rd
	qf, kvpe := a.mq[:n*qw], a.mkv[:n*kw]
	if ly.mla.qA != nil {
		qa := a.mqa[:n*ml.QLoraRank]
		s.matmul(a, h, n, mmPart{ly.mla.qA, qa}, mmPart{ly.mla.kvA, kvpe})
		s.rows(a, opNorm, qa, qa, ly.mla.qANorm, ml.QLoraRank, n)
		s.matmul(a, qa, n, mmPart{ly.mla.qB, qf})
	} else {
		s.matmul(a, h, n, mmPart{ly.q, qf}, mmPart{ly.mla.kvA, kvpe})
	}
	for t := 0; t < n; t++ {
		kv := kvpe[t*kw : (t+1)*kw]
		kt := k[t*kw : (t+1)*kw]
		rmsNorm(kt[:kvr], kv[:kvr], ly.mla.kvANorm, cfg.RMSEps)
		copy(v[t*kvr:(t+1)*kvr], kt[:kvr])
		copy(kt[kvr:], kv[kvr:])
		a.rope.rope(kt[kvr:], t, false)
		for hh := 0; hh < nh; hh++ {
			a.rope.rope(qf[t*qw+hh*kl+nope:t*qw+(hh+1)*kl], t, false)
		}
	}
	// Absorb each head's unrotated query into the latent space: one
	// matmul per head over all the rows, the heads taking the place of
	// experts.
	start := a.mstart[:nh+1]
	for hh := range start {
		start[hh] = hh * n
	}
	xe := a.mx[:nh*n*nope]
	for hh := 0; hh < nh; hh++ {
		for t := 0; t < n; t++ {
			copy(xe[(hh*n+t)*nope:(hh*n+t+1)*nope], qf[t*qw+hh*kl:t*qw+hh*kl+nope])
		}
	}
	abs := a.my[:nh*n*kvr]
	s.expertMatmul(a, xe, nope, start, ly.mla.kB, nil, abs)
	qd := nh * kw
	for t := 0; t < n; t++ {
		for hh := 0; hh < nh; hh++ {
			qh := q[t*qd+hh*kw : t*qd+(hh+1)*kw]
			copy(qh[:kvr], abs[(hh*n+t)*kvr:(hh*n+t+1)*kvr])
			copy(qh[kvr:], qf[t*qw+hh*kl+nope:t*qw+(hh+1)*kl])
		}
	}
}

// mlaOut expands each head's attention output (n × NHead × KVLoraRank)
// from the latent to ValueLen values with attn_v_b, returning the n ×
// NHead·ValueLen input of the output projection.
func (s *Shard) mlaOut(a *arena, ly *layer, att []float32, n int) []float32 {
	cfg := s.Config
	ml := cfg.MLA
	nh, kvr, vl := cfg.NHead, ml.KVLoraRank, ml.ValueLen
	start := a.mstart[:nh+1]
	for hh := range start {
		start[hh] = hh * n
	}
	xe := a.mx[:nh*n*kvr]
	for hh := 0; hh < nh; hh++ {
		for t := 0; t < n; t++ {
			copy(xe[(hh*n+t)*kvr:(hh*n+t+1)*kvr], att[t*nh*kvr+hh*kvr:t*nh*kvr+(hh+1)*kvr])
		}
	}
	ye := a.my[:nh*n*vl]
	s.expertMatmul(a, xe, kvr, start, ly.mla.vB, nil, ye)
	out := a.mo[:n*nh*vl]
	for t := 0; t < n; t++ {
		for hh := 0; hh < nh; hh++ {
			copy(out[t*nh*vl+hh*vl:t*nh*vl+(hh+1)*vl], ye[(hh*n+t)*vl:(hh*n+t+1)*vl])
		}
	}
	return out
}
