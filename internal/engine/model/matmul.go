package model

import (
	"github.com/skulk/skulk/internal/engine/tensor"
)

// mmPart is one weight matrix of a matmul and where its n × rows results go.
type mmPart struct {
	m   *matrix
	out []float32
}

// maxParts is the most matrices one matmul job fuses (q, k and v).
const maxParts = 3

// Tiling. A decode step streams every weight once, so its jobs hand out
// chunks of about decodeChunkBytes of weight rows, a multiple of the
// threads per matrix (decodeRowChunk): long sequential reads, since every
// chunk restarts the hardware prefetchers, and the threads still even out.
// A prefill batch is a matrix-matrix product: each chunk is a tile of weight rows
// small enough to stay in L1 (tileBytes) against prefillTokens activation
// rows, which stay in L2, so every weight byte read from memory is used by
// prefillTokens tokens. Within a chunk, VecDotTile multiplies register
// tiles of four rows by four tokens, so a chunk holds a multiple of four
// rows.
const (
	decodeChunkBytes = 1024 << 10
	tileBytes        = 32 << 10
	maxTileRows      = 64
	prefillTokens    = 64
)

// matmulJob computes out[t][r] = Σ_c m[r][c]·x[t][c] for one or more
// matrices reading the same activations. Each (row, token) result is bit
// for bit the kernels' one-pair VecDot whatever the tiling (VecDotTile's
// contract), so it does not depend on the batch size, the thread count or
// how rows were split.
type matmulJob struct {
	k        tensor.Kernels
	parts    [maxParts]mmPart
	ends     [maxParts]int // cumulative row-chunk counts per part
	rowChunk [maxParts]int // rows per chunk, per part
	perTile  int           // chunks per token tile
	tokTile  int
	n        int
	x        []float32 // F32 activations (dotF32)
	act      []byte    // activations in the vec-dot type, ab bytes a row
	ab       int
	dotF32   bool
}

func (j *matmulJob) do(_, lo, hi int) {
	for it := lo; it < hi; it++ {
		tt, c := it/j.perTile, it%j.perTile
		p := 0
		for c >= j.ends[p] {
			p++
		}
		if p > 0 {
			c -= j.ends[p-1]
		}
		m, out := j.parts[p].m, j.parts[p].out
		r0 := c * j.rowChunk[p]
		r1 := min(r0+j.rowChunk[p], m.rows)
		t0 := tt * j.tokTile
		m.block(j.k, r0, r1, t0, min(t0+j.tokTile, j.n), j.dotF32, j.x, j.act, j.ab, out)
	}
}

// block computes out[t·m.rows + r] = row r of m · token t for rows [r0,
// r1) and tokens [t0, t1): from the float activations x through DotF32
// when dotF32, else from the activations act (ab bytes a row) in m's
// vec-dot type, through the packed kernels when m is packed.
func (m *matrix) block(k tensor.Kernels, r0, r1, t0, t1 int, dotF32 bool, x []float32, act []byte, ab int, out []float32) {
	switch {
	case dotF32:
		for t := t0; t < t1; t++ {
			xt := x[t*m.cols : (t+1)*m.cols]
			o := out[t*m.rows:]
			for r := r0; r < r1; r++ {
				o[r] = k.DotF32(m.typ, m.row(r), xt)
			}
		}
	case m.packed > 0:
		k.VecDotPacked(m.typ, m.data[r0*m.rowBytes:r1*m.rowBytes], r1-r0,
			act[t0*ab:t1*ab], ab, t1-t0, m.cols, out[t0*m.rows+r0:], m.rows)
	default:
		k.VecDotTile(m.typ, m.data[r0*m.rowBytes:r1*m.rowBytes], m.rowBytes, r1-r0,
			act[t0*ab:t1*ab], ab, t1-t0, m.cols, out[t0*m.rows+r0:], m.rows)
	}
}

// quantJob rounds n activation rows to a vec-dot type.
type quantJob struct {
	k    tensor.Kernels
	typ  tensor.Type // the weights' type
	x    []float32
	cols int
	act  []byte
	ab   int
}

func (j *quantJob) do(_, lo, hi int) {
	for t := lo; t < hi; t++ {
		if err := j.k.QuantizeAct(j.typ, j.x[t*j.cols:(t+1)*j.cols], j.act[t*j.ab:(t+1)*j.ab]); err != nil {
			panic(err) // sizes are fixed at load time; an error here is a bug
		}
	}
}

// usesDotF32 says whether m's products run through DotF32 on float
// activations, dequantizing the weights: every type but F32 does when the
// shard keeps exact activations. (F32 weights take F32 activations in the
// vec-dot path, read in place.)
func (s *Shard) usesDotF32(m *matrix) bool { return m.typ != tensor.F32 && s.exactActs }

// matmul computes out = x·mᵀ for every part over n tokens of x. Unless the
// shard keeps exact activations, x is first rounded to the weights' vec-dot
// type, as llama.cpp's CPU backend does, and the dot products run on the
// quantized blocks. Parts that read x in the same form run as one parallel
// job; the caller orders them so that such parts are adjacent.
func (s *Shard) matmul(a *arena, x []float32, n int, parts ...mmPart) {
	for len(parts) > 0 {
		k := 1
		for k < len(parts) && k < maxParts && s.sameActs(parts[0].m, parts[k].m) {
			k++
		}
		s.matmulGroup(a, x, n, parts[:k])
		parts = parts[k:]
	}
}

func (s *Shard) sameActs(a, b *matrix) bool {
	if s.usesDotF32(a) || s.usesDotF32(b) {
		return s.usesDotF32(a) && s.usesDotF32(b)
	}
	if a.typ == tensor.F32 || b.typ == tensor.F32 {
		return a.typ == b.typ
	}
	return tensor.VecDotType(a.typ) == tensor.VecDotType(b.typ)
}

func (s *Shard) matmulGroup(a *arena, x []float32, n int, parts []mmPart) {
	j := &a.mm
	*j = matmulJob{k: s.k, n: n, x: x, tokTile: n}
	m0 := parts[0].m
	cols := m0.cols
	j.dotF32 = s.usesDotF32(m0)
	switch {
	case j.dotF32:
	case m0.typ == tensor.F32:
		j.ab, j.act = 4*cols, tensor.F32Bytes(x)
	default:
		at := tensor.VecDotType(m0.typ)
		ab, _ := tensor.RowBytes(at, int64(cols))
		j.ab = int(ab)
		j.act = a.act[:n*j.ab]
		q := &a.qj
		*q = quantJob{k: s.k, typ: m0.typ, x: x, cols: cols, act: j.act, ab: j.ab}
		s.pool.run(q, n, 8, n*cols)
	}
	if n > 1 {
		j.tokTile = prefillTokens
	}
	rows, chunks := 0, 0
	for i, p := range parts {
		j.parts[i] = p
		rc := s.rowChunk(p.m, n > 1)
		j.rowChunk[i] = rc
		chunks += (p.m.rows + rc - 1) / rc
		j.ends[i] = chunks
		rows += p.m.rows
	}
	j.perTile = chunks
	tiles := (n + j.tokTile - 1) / j.tokTile
	s.pool.run(j, tiles*chunks, 1, rows*cols*n)
	*j = matmulJob{} // drop the references to x and the outputs
}

// rowChunk is the weight rows per chunk of a product over m: a decode
// chunk for one token, a prefill tile's rows for a batch. A packed m is
// split between its groups only.
func (s *Shard) rowChunk(m *matrix, batch bool) int {
	rc := s.decodeRowChunk(m)
	if batch {
		rc = min(max(tileBytes/m.rowBytes&^3, 4), maxTileRows)
	}
	if g := m.packed; g > 0 {
		rc = (rc + g - 1) / g * g
	}
	return rc
}

// decodeRowChunk is the rows per chunk of a decode matmul over m: about
// decodeChunkBytes of weights, in a number of chunks that is a multiple of
// the threads, so that the threads stream long runs of rows and, unless the
// OS holds one back, finish together.
func (s *Shard) decodeRowChunk(m *matrix) int {
	bytes := m.rows * m.rowBytes
	c := max((bytes+decodeChunkBytes/2)/decodeChunkBytes, 1)
	c = (c + s.pool.n - 1) / s.pool.n * s.pool.n
	return max((m.rows+c-1)/c, 1)
}
