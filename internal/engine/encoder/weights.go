package encoder

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// matrix is a weight matrix as GGUF stores it: rows of cols elements of typ,
// row-major, aliasing the file.
type matrix struct {
	typ        tensor.Type
	rows, cols int
	stride     int // bytes per row
	data       []byte
}

func (m *matrix) row(r int) []byte { return m.data[r*m.stride : (r+1)*m.stride] }

// block is one encoder layer.
type block struct {
	q, k, v, o     matrix
	bq, bk, bv, bo []float32
	attnNormW      []float32
	attnNormB      []float32
	up, down       matrix
	upB, downB     []float32
	outNormW       []float32
	outNormB       []float32
}

// weights reads tensors from f, checking every shape against the config.
type weights struct {
	f   *gguf.File
	k   tensor.Kernels
	err error
}

// matrix loads a [rows × cols] matrix (GGUF dims {cols, rows}). rows < 0
// accepts any row count ≥ 1.
func (w *weights) matrix(name string, rows, cols int) matrix {
	if w.err != nil {
		return matrix{}
	}
	info, ok := w.f.Tensor(name)
	if !ok {
		w.err = invalidf("missing tensor %s", name)
		return matrix{}
	}
	if len(info.Dims) != 2 || info.Dims[0] != uint64(cols) || info.Dims[1] < 1 || info.Dims[1] > maxDim ||
		(rows >= 0 && info.Dims[1] != uint64(rows)) {
		want := fmt.Sprintf("[%d %d]", cols, rows)
		if rows < 0 {
			want = fmt.Sprintf("[%d n]", cols)
		}
		w.err = invalidf("tensor %s has dims %v, want %s", name, info.Dims, want)
		return matrix{}
	}
	stride, err := tensor.RowBytes(info.Type, int64(cols))
	if err != nil {
		w.err = fmt.Errorf("encoder: tensor %s: %w", name, err)
		return matrix{}
	}
	if err := w.k.CheckDot(info.Type, cols, int(stride), -1); err != nil {
		w.err = fmt.Errorf("encoder: tensor %s: %w", name, err)
		return matrix{}
	}
	data, err := w.f.TensorData(name)
	if err != nil {
		w.err = fmt.Errorf("encoder: tensor %s: %w", name, err)
		return matrix{}
	}
	n := int(info.Dims[1])
	if int64(len(data)) != stride*int64(n) {
		w.err = invalidf("tensor %s holds %d bytes, want %d", name, len(data), stride*int64(n))
		return matrix{}
	}
	return matrix{typ: info.Type, rows: n, cols: cols, stride: int(stride), data: data}
}

// vector loads a one-dimensional F32 tensor of n elements.
func (w *weights) vector(name string, n int) []float32 {
	if w.err != nil {
		return nil
	}
	info, ok := w.f.Tensor(name)
	if !ok {
		w.err = invalidf("missing tensor %s", name)
		return nil
	}
	if len(info.Dims) != 1 || info.Dims[0] != uint64(n) {
		w.err = invalidf("tensor %s has dims %v, want [%d]", name, info.Dims, n)
		return nil
	}
	if info.Type != tensor.F32 {
		w.err = invalidf("tensor %s has type %v, want F32", name, info.Type)
		return nil
	}
	data, err := w.f.TensorData(name)
	if err != nil {
		w.err = fmt.Errorf("encoder: tensor %s: %w", name, err)
		return nil
	}
	if len(data) != 4*n {
		w.err = invalidf("tensor %s holds %d bytes, want %d", name, len(data), 4*n)
		return nil
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return out
}

func (w *weights) block(i int, c Config) block {
	p := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
	e, ff := c.NEmbd, c.NFF
	return block{
		q: w.matrix(p("attn_q.weight"), e, e), bq: w.vector(p("attn_q.bias"), e),
		k: w.matrix(p("attn_k.weight"), e, e), bk: w.vector(p("attn_k.bias"), e),
		v: w.matrix(p("attn_v.weight"), e, e), bv: w.vector(p("attn_v.bias"), e),
		o: w.matrix(p("attn_output.weight"), e, e), bo: w.vector(p("attn_output.bias"), e),
		attnNormW: w.vector(p("attn_output_norm.weight"), e),
		attnNormB: w.vector(p("attn_output_norm.bias"), e),
		up:        w.matrix(p("ffn_up.weight"), ff, e), upB: w.vector(p("ffn_up.bias"), ff),
		down: w.matrix(p("ffn_down.weight"), e, ff), downB: w.vector(p("ffn_down.bias"), e),
		outNormW: w.vector(p("layer_output_norm.weight"), e),
		outNormB: w.vector(p("layer_output_norm.bias"), e),
	}
}
