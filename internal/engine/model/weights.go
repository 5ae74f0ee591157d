package model

import (
	"errors"
	"fmt"
	"sync"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// matrix is a 2-D weight in its stored type: rows of cols elements each,
// aliasing the file's mapping, or, when packed, in the kernels' interleaved
// layout (tensor.Kernels.Pack) in memory of its own, groups of rows taking
// the bytes the rows took.
type matrix struct {
	name     string
	typ      tensor.Type
	rows     int
	cols     int
	rowBytes int
	data     []byte
	packed   int // rows per packed group; 0 when stored as in the file
}

func (m *matrix) row(i int) []byte { return m.data[i*m.rowBytes : (i+1)*m.rowBytes] }

// loader pulls tensors out of a GGUF file with shape checks.
type loader struct {
	f *gguf.File
	k tensor.Kernels
	// allowPack lets weights be packed for the kernels (not when the
	// shard keeps exact activations, whose products read rows one by one).
	allowPack bool
	// threads pack a tensor's groups side by side (gpt-oss-120b's 60 GB of
	// experts take about 40 s on one core).
	threads int
}

func (l loader) has(name string) bool { _, ok := l.f.Tensor(name); return ok }

// matrix loads name as rows × cols (GGML dims [cols, rows]).
func (l loader) matrix(name string, rows, cols int) (*matrix, error) {
	ti, ok := l.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("model: missing tensor %s", name)
	}
	if len(ti.Dims) != 2 || ti.Dims[0] != uint64(cols) || ti.Dims[1] != uint64(rows) {
		return nil, fmt.Errorf("model: tensor %s has shape %v, want [%d %d]", name, ti.Dims, cols, rows)
	}
	if !ti.Type.Supported() {
		return nil, fmt.Errorf("model: tensor %s: %w: %s", name, gguf.ErrUnsupported, ti.Type)
	}
	data, err := l.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	rb, _ := tensor.RowBytes(ti.Type, int64(cols))
	return &matrix{name: name, typ: ti.Type, rows: rows, cols: cols, rowBytes: int(rb), data: data}, nil
}

// packed loads name as matrix does and packs it for the kernels when they
// pack its type and its rows are whole groups. Only matrices that are
// multiplied and never read by the row (not the token embeddings) may be
// loaded this way.
func (l loader) packed(name string, rows, cols int) (*matrix, error) {
	m, err := l.matrix(name, rows, cols)
	if err != nil {
		return nil, err
	}
	if err := l.pack(m, rows); err != nil {
		return nil, fmt.Errorf("model: tensor %s: %w", name, err)
	}
	return m, nil
}

// pack packs m in place when the kernels pack its type and unit (the rows
// of one expert, or all of them) is a whole number of groups, so that
// expert e's groups still take the bytes of its rows; it releases the
// file's pages of the rows.
func (l loader) pack(m *matrix, unit int) error {
	g := l.k.PackRows(m.typ)
	if !l.allowPack || g == 0 || unit%g != 0 {
		return nil
	}
	packed := make([]byte, len(m.data))
	if err := l.packGroups(m.typ, m.data, m.rows, m.cols, g, packed); err != nil {
		return err
	}
	l.f.Drop(m.data)
	m.data, m.packed = packed, g
	return nil
}

// split loads name, a fused matrix of sum(rows) × cols, as one matrix per
// run of rows, in order: each aliases its rows of the file and is packed
// on its own (as packed does), so the parts are multiplied exactly as
// separate tensors of the same type would be.
func (l loader) split(name string, rows []int, cols int) ([]*matrix, error) {
	total := 0
	for _, r := range rows {
		total += r
	}
	m, err := l.matrix(name, total, cols)
	if err != nil {
		return nil, err
	}
	parts := make([]*matrix, len(rows))
	lo := 0
	for i, r := range rows {
		p := *m
		p.rows, p.data = r, m.data[lo*m.rowBytes:(lo+r)*m.rowBytes:(lo+r)*m.rowBytes]
		if err := l.pack(&p, r); err != nil {
			return nil, fmt.Errorf("model: tensor %s: %w", name, err)
		}
		parts[i] = &p
		lo += r
	}
	return parts, nil
}

// experts loads name as n expert matrices of rows × cols (GGML dims
// [cols, rows, n]).
func (l loader) experts(name string, n, rows, cols int) (*experts, error) {
	ti, ok := l.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("model: missing tensor %s", name)
	}
	if len(ti.Dims) != 3 || ti.Dims[0] != uint64(cols) || ti.Dims[1] != uint64(rows) || ti.Dims[2] != uint64(n) {
		return nil, fmt.Errorf("model: tensor %s has shape %v, want [%d %d %d]", name, ti.Dims, cols, rows, n)
	}
	if !ti.Type.Supported() {
		return nil, fmt.Errorf("model: tensor %s: %w: %s", name, gguf.ErrUnsupported, ti.Type)
	}
	data, err := l.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	rb, _ := tensor.RowBytes(ti.Type, int64(cols))
	x := &experts{all: matrix{name: name, typ: ti.Type, rows: n * rows, cols: cols, rowBytes: int(rb), data: data}, n: n, rows: rows}
	if err := l.pack(&x.all, rows); err != nil {
		return nil, fmt.Errorf("model: tensor %s: %w", name, err)
	}
	return x, nil
}

// packGroups packs rows (whole groups of g) of t into dst on up to
// l.threads goroutines, each a run of whole groups: a group's packed bytes
// take the place of its rows, so the runs are independent.
func (l loader) packGroups(t tensor.Type, src []byte, rows, cols, g int, dst []byte) error {
	rb := len(src) / rows
	groups := rows / g
	parts := max(1, min(l.threads, groups))
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := groups*p/parts*g, groups*(p+1)/parts*g
		wg.Go(func() { errs[p] = l.k.Pack(t, src[lo*rb:hi*rb], hi-lo, cols, dst[lo*rb:hi*rb]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// vector loads a 1-D tensor of n elements and dequantizes it to F32.
func (l loader) vector(name string, n int) ([]float32, error) {
	ti, ok := l.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("model: missing tensor %s", name)
	}
	if len(ti.Dims) != 1 || ti.Dims[0] != uint64(n) {
		return nil, fmt.Errorf("model: tensor %s has shape %v, want [%d]", name, ti.Dims, n)
	}
	if !ti.Type.Supported() {
		return nil, fmt.Errorf("model: tensor %s: %w: %s", name, gguf.ErrUnsupported, ti.Type)
	}
	data, err := l.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	if err := l.k.Dequantize(ti.Type, data, out); err != nil {
		return nil, fmt.Errorf("model: tensor %s: %w", name, err)
	}
	return out, nil
}

// table loads a 2-D tensor of n rows of w elements (GGML dims [w, n]) and
// dequantizes it to F32: gpt-oss's per-expert biases.
func (l loader) table(name string, n, w int) ([]float32, error) {
	ti, ok := l.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("model: missing tensor %s", name)
	}
	if len(ti.Dims) != 2 || ti.Dims[0] != uint64(w) || ti.Dims[1] != uint64(n) {
		return nil, fmt.Errorf("model: tensor %s has shape %v, want [%d %d]", name, ti.Dims, w, n)
	}
	if !ti.Type.Supported() {
		return nil, fmt.Errorf("model: tensor %s: %w: %s", name, gguf.ErrUnsupported, ti.Type)
	}
	data, err := l.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n*w)
	if err := l.k.Dequantize(ti.Type, data, out); err != nil {
		return nil, fmt.Errorf("model: tensor %s: %w", name, err)
	}
	return out, nil
}

// optionalVector loads name when present.
func (l loader) optionalVector(name string, n int) ([]float32, error) {
	if !l.has(name) {
		return nil, nil
	}
	return l.vector(name, n)
}

// dequantRow expands row r of m into dst with k.
func dequantRow(k tensor.Kernels, m *matrix, r int, dst []float32) error {
	return k.Dequantize(m.typ, m.row(r), dst)
}
