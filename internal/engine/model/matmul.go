package model

import (
	"github.com/skulk/skulk/internal/engine/tensor"
)

// matmul computes out[t][r] = Σ_c m[r][c]·x[t][c] for n tokens. Unless the
// shard keeps exact activations, x is first rounded to the weights' vec-dot
// type, as llama.cpp's CPU backend does, and the dot products run on the
// quantized blocks.
func (s *Shard) matmul(m *matrix, x []float32, n int, out []float32) {
	k := tensor.Best()
	rows, cols := m.rows, m.cols
	if m.typ == tensor.F32 || s.exactActs {
		s.pool.run(rows, 4, rows*cols*n, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				row := m.row(r)
				for t := 0; t < n; t++ {
					out[t*rows+r] = k.DotF32(m.typ, row, x[t*cols:(t+1)*cols])
				}
			}
		})
		return
	}
	at := tensor.VecDotType(m.typ)
	arb, _ := tensor.RowBytes(at, int64(cols))
	act := make([]byte, n*int(arb))
	s.pool.run(n, 1, n*cols, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			if err := k.QuantizeAct(m.typ, x[t*cols:(t+1)*cols], act[t*int(arb):(t+1)*int(arb)]); err != nil {
				panic(err) // sizes are fixed at load time; an error here is a bug
			}
		}
	})
	s.pool.run(rows, 4, rows*cols*n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := m.row(r)
			for t := 0; t < n; t++ {
				out[t*rows+r] = k.VecDot(m.typ, row, act[t*int(arb):(t+1)*int(arb)], cols)
			}
		}
	})
}
