package encoder

import (
	"math"
	"sync"
)

// scratch holds one Embed call's intermediate activations.
type scratch struct {
	q, k, v, att, proj []float32 // [n × NEmbd]
	up                 []float32 // [n × NFF]
	scores             []float32 // [n]
	n                  int
}

func newScratch(c Config, n int) *scratch {
	e := n * c.NEmbd
	return &scratch{
		q: make([]float32, e), k: make([]float32, e), v: make([]float32, e),
		att: make([]float32, e), proj: make([]float32, e),
		up: make([]float32, n*c.NFF), scores: make([]float32, n), n: n,
	}
}

// forwardBlock runs one encoder layer on x ([n × NEmbd]) in place.
func (e *Encoder) forwardBlock(b *block, x []float32, s *scratch) {
	c, n := e.cfg, s.n
	d := c.NEmbd
	e.matmul(&b.q, b.bq, x, n, s.q)
	e.matmul(&b.k, b.bk, x, n, s.k)
	e.matmul(&b.v, b.bv, x, n, s.v)
	e.attention(s)
	e.matmul(&b.o, b.bo, s.att, n, s.proj)
	for t := range n {
		row := s.proj[t*d : (t+1)*d]
		for j, r := range x[t*d : (t+1)*d] {
			row[j] += r
		}
		layerNorm(row, row, b.attnNormW, b.attnNormB, c.Eps)
	}
	// s.proj is now the feed-forward input and its residual.
	e.matmul(&b.up, b.upB, s.proj, n, s.up)
	gelu(s.up)
	e.matmul(&b.down, b.downB, s.up, n, x)
	for t := range n {
		row := x[t*d : (t+1)*d]
		for j, r := range s.proj[t*d : (t+1)*d] {
			row[j] += r
		}
		layerNorm(row, row, b.outNormW, b.outNormB, c.Eps)
	}
}

// attention computes bidirectional multi-head attention of s.q, s.k, s.v
// into s.att. Scores are scaled by 1/sqrt(HeadDim); the softmax sums exp in
// float64 and multiplies by the float32 reciprocal, as ggml's soft_max does.
func (e *Encoder) attention(s *scratch) {
	c, n := e.cfg, s.n
	d, hd := c.NEmbd, c.HeadDim
	scale := float32(1) / float32(math.Sqrt(float64(hd)))
	p := s.scores
	for h := range c.NHead {
		off := h * hd
		for i := range n {
			q := s.q[i*d+off : i*d+off+hd]
			mx := float32(math.Inf(-1))
			for j := range n {
				p[j] = dot(s.k[j*d+off:j*d+off+hd], q) * scale
				mx = max(mx, p[j])
			}
			var sum float64
			for j := range n {
				p[j] = float32(math.Exp(float64(p[j] - mx)))
				sum += float64(p[j])
			}
			inv := float32(1 / sum)
			out := s.att[i*d+off : i*d+off+hd]
			clear(out)
			for j := range n {
				w := p[j] * inv
				v := s.v[j*d+off : j*d+off+hd]
				for k := range out {
					out[k] += v[k] * w
				}
			}
		}
	}
}

func dot(a, b []float32) float32 {
	var s float32
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// minParallelWork is the multiply-adds below which a matmul runs on the
// caller's goroutine alone.
const minParallelWork = 1 << 16

// matmul computes out[t][r] = Σ_c m[r][c]·x[t][c] + bias[r] for n tokens,
// splitting the rows over up to e.threads goroutines.
func (e *Encoder) matmul(m *matrix, bias, x []float32, n int, out []float32) {
	rows, cols := m.rows, m.cols
	run := func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := m.row(r)
			for t := range n {
				out[t*rows+r] = e.kern.DotF32(m.typ, row, x[t*cols:(t+1)*cols]) + bias[r]
			}
		}
	}
	parts := e.threads
	if rows*cols*n < minParallelWork {
		parts = 1
	}
	parts = min(parts, rows)
	if parts <= 1 {
		run(0, rows)
		return
	}
	per := (rows + parts - 1) / parts
	var wg sync.WaitGroup
	for lo := per; lo < rows; lo += per {
		wg.Go(func() { run(lo, min(lo+per, rows)) })
	}
	run(0, min(per, rows))
	wg.Wait()
}

// layerNorm writes (x - mean)/sqrt(var + eps)·w + b to dst (which may be x),
// with ggml's sums: the mean's sum and the variance's sum of float squares
// run in float64, everything else in float32.
func layerNorm(dst, x, w, b []float32, eps float32) {
	n := len(x)
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum) / float32(n)
	var sum2 float64
	for i, v := range x {
		c := v - mean
		dst[i] = c
		sum2 += float64(c * c)
	}
	variance := float32(sum2 / float64(n))
	scale := 1 / float32(math.Sqrt(float64(variance+eps)))
	for i := range dst {
		dst[i] = float32(float32(dst[i]*scale)*w[i]) + b[i]
	}
}
