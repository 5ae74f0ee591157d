package model

import (
	"fmt"
	"math"
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
type Result struct {
	Hidden []float32
	Logits []float32
}

// Forward runs the batch through the shard's blocks, appending its keys and
// values to c.
func (s *Shard) Forward(c *Cache, b Batch) (Result, error) {
	cfg := s.Config
	d := cfg.NEmbd
	var x []float32
	var n int
	if s.Range.First {
		n = len(b.Tokens)
		if b.Hidden != nil {
			return Result{}, fmt.Errorf("model: the first shard takes token ids, not hidden states")
		}
		x = make([]float32, n*d)
		for i, id := range b.Tokens {
			if id < 0 || int(id) >= cfg.NVocab {
				return Result{}, fmt.Errorf("model: token id %d at position %d is outside the vocabulary of %d", id, i, cfg.NVocab)
			}
			if err := s.embedRow(id, x[i*d:(i+1)*d]); err != nil {
				return Result{}, err
			}
		}
	} else {
		if b.Tokens != nil {
			return Result{}, fmt.Errorf("model: shard [%d, %d) takes hidden states, not token ids", s.Range.Start, s.Range.End)
		}
		if len(b.Hidden)%d != 0 {
			return Result{}, fmt.Errorf("model: %d hidden values is not a whole number of %d-wide rows", len(b.Hidden), d)
		}
		n = len(b.Hidden) / d
		x = append([]float32(nil), b.Hidden...)
	}
	if n == 0 {
		return Result{}, fmt.Errorf("model: empty batch")
	}
	if len(c.k) != len(s.layers) || c.kvDim != cfg.KVDim() {
		return Result{}, fmt.Errorf("model: cache was made for another shard")
	}
	if c.len+n > c.cap {
		return Result{}, &ErrCacheFull{Have: c.len, Add: n, Cap: c.cap}
	}
	st := s.newScratch(n)
	rt := s.ropeTable(c.len, n)
	for i := range s.layers {
		s.block(i, c, x, n, rt, st)
	}
	c.len += n
	if !s.Range.Last {
		return Result{Hidden: x}, nil
	}
	rows := x
	first := 0
	if !b.AllLogits {
		first = n - 1
		rows = x[first*d:]
	}
	m := n - first
	normed := make([]float32, m*d)
	for t := 0; t < m; t++ {
		rmsNorm(normed[t*d:(t+1)*d], rows[t*d:(t+1)*d], s.outNorm, cfg.RMSEps)
	}
	logits := make([]float32, m*cfg.NVocab)
	s.matmul(s.output, normed, m, logits)
	return Result{Logits: logits}, nil
}

func (s *Shard) embedRow(id int32, dst []float32) error {
	return dequantRow(s.embd, int(id), dst)
}

// scratch holds the per-batch intermediate buffers.
type scratch struct {
	h, q, k, v, att, o []float32
	gate, up, ffo      []float32
}

func (s *Shard) newScratch(n int) *scratch {
	c := s.Config
	return &scratch{
		h: make([]float32, n*c.NEmbd), q: make([]float32, n*c.QDim()),
		k: make([]float32, n*c.KVDim()), v: make([]float32, n*c.KVDim()),
		att: make([]float32, n*c.QDim()), o: make([]float32, n*c.NEmbd),
		gate: make([]float32, n*c.NFF), up: make([]float32, n*c.NFF), ffo: make([]float32, n*c.NEmbd),
	}
}

// block runs local block i over the batch x (n × NEmbd) in place.
func (s *Shard) block(i int, c *Cache, x []float32, n int, rt ropeTable, st *scratch) {
	cfg := s.Config
	ly := &s.layers[i]
	d, hd, kvd, qd := cfg.NEmbd, cfg.HeadDim, cfg.KVDim(), cfg.QDim()
	for t := 0; t < n; t++ {
		rmsNorm(st.h[t*d:(t+1)*d], x[t*d:(t+1)*d], ly.attnNorm, cfg.RMSEps)
	}
	s.matmul(ly.q, st.h, n, st.q)
	s.matmul(ly.k, st.h, n, st.k)
	s.matmul(ly.v, st.h, n, st.v)
	for t := 0; t < n; t++ {
		addBias(st.q[t*qd:(t+1)*qd], ly.qBias)
		addBias(st.k[t*kvd:(t+1)*kvd], ly.kBias)
		addBias(st.v[t*kvd:(t+1)*kvd], ly.vBias)
		for h := 0; h < cfg.NHead; h++ {
			qh := st.q[t*qd+h*hd : t*qd+(h+1)*hd]
			if ly.qNorm != nil {
				rmsNorm(qh, qh, ly.qNorm, cfg.RMSEps)
			}
			rt.rope(qh, t, cfg.RopeNeoX)
		}
		for h := 0; h < cfg.NHeadKV; h++ {
			kh := st.k[t*kvd+h*hd : t*kvd+(h+1)*hd]
			if ly.kNorm != nil {
				rmsNorm(kh, kh, ly.kNorm, cfg.RMSEps)
			}
			rt.rope(kh, t, cfg.RopeNeoX)
		}
	}
	pos0 := c.len
	copy(c.k[i][pos0*kvd:], st.k[:n*kvd])
	copy(c.v[i][pos0*kvd:], st.v[:n*kvd])
	s.attention(c.k[i], c.v[i], st.q, st.att, pos0, n)
	s.matmul(ly.o, st.att, n, st.o)
	for j := range x {
		x[j] += st.o[j]
	}
	for t := 0; t < n; t++ {
		rmsNorm(st.h[t*d:(t+1)*d], x[t*d:(t+1)*d], ly.ffnNorm, cfg.RMSEps)
	}
	s.matmul(ly.gate, st.h, n, st.gate)
	s.matmul(ly.up, st.h, n, st.up)
	for j := range st.gate {
		st.gate[j] = silu(st.gate[j]) * st.up[j]
	}
	s.matmul(ly.down, st.gate, n, st.ffo)
	for j := range x {
		x[j] += st.ffo[j]
	}
}

func addBias(x, b []float32) {
	for i := range b {
		x[i] += b[i]
	}
}

// attention computes causal scaled dot-product attention for n new tokens at
// positions pos0.., reading keys and values [0, pos0+n) from the cache.
func (s *Shard) attention(kc, vc, q, out []float32, pos0, n int) {
	cfg := s.Config
	hd, kvd, qd := cfg.HeadDim, cfg.KVDim(), cfg.QDim()
	group := cfg.NHead / cfg.NHeadKV
	scale := float32(1 / math.Sqrt(float64(hd)))
	s.pool.run(n*cfg.NHead, 1, n*cfg.NHead*(pos0+n)*hd*2, func(lo, hi int) {
		scores := make([]float32, pos0+n)
		for job := lo; job < hi; job++ {
			t, h := job/cfg.NHead, job%cfg.NHead
			g := h / group
			qh := q[t*qd+h*hd : t*qd+(h+1)*hd]
			span := pos0 + t + 1
			sc := scores[:span]
			for j := 0; j < span; j++ {
				sc[j] = dotF32(qh, kc[j*kvd+g*hd:j*kvd+(g+1)*hd])
			}
			softmaxScaled(sc, scale)
			o := out[t*qd+h*hd : t*qd+(h+1)*hd]
			clear(o)
			for j := 0; j < span; j++ {
				w := sc[j]
				vj := vc[j*kvd+g*hd : j*kvd+(g+1)*hd]
				for e := range o {
					o[e] += w * vj[e]
				}
			}
		}
	})
}
