package encoder

import (
	"fmt"
	"math"
	"runtime"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/tensor"
	"github.com/skulk/skulk/internal/engine/tokenizer"
)

// Options tune Open.
type Options struct {
	// Threads is how many goroutines a matmul may use; 0 means GOMAXPROCS.
	Threads int
	// Pooling overrides the model's bert.pooling_type; 0 keeps it.
	Pooling Pooling
	// Kernels caps the kernel set (tensor.Capped); "" uses the best the
	// CPU has.
	Kernels string
}

// Encoder is a loaded bert model. It is immutable and safe for concurrent
// use while its gguf.File stays open.
type Encoder struct {
	cfg     Config
	tok     *tokenizer.Tokenizer
	kern    tensor.Kernels
	threads int

	tokEmbd  matrix    // [NVocab × NEmbd], rows dequantized on lookup
	typeEmbd []float32 // row 0 of token_types.weight, or nil
	posEmbd  []float32 // [MaxPositions × NEmbd]
	normW    []float32 // token_embd_norm
	normB    []float32
	blocks   []block
}

// Embedding is the result of one Embed call.
type Embedding struct {
	Pooled     []float32   // the pooled vector before normalisation
	Normalized []float32   // Pooled scaled to unit L2 norm (all zeros if Pooled is)
	Tokens     [][]float32 // the last block's output for every token
}

// Open loads the encoder and its tokenizer from a bert GGUF.
func Open(f *gguf.File, opt Options) (*Encoder, error) {
	cfg, err := ReadConfig(f)
	if err != nil {
		return nil, err
	}
	if opt.Pooling != 0 {
		cfg.Pooling = opt.Pooling
	}
	if cfg.Pooling != PoolingMean && cfg.Pooling != PoolingCLS {
		return nil, &UnsupportedError{What: "pooling type", Value: cfg.Pooling.String(), Supported: "mean, cls"}
	}
	if opt.Threads < 0 {
		return nil, fmt.Errorf("encoder: threads %d < 0", opt.Threads)
	}
	kern, err := tensor.Capped(opt.Kernels)
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	e := &Encoder{cfg: cfg, kern: kern, threads: opt.Threads}
	if e.threads == 0 {
		e.threads = runtime.GOMAXPROCS(0)
	}
	w := &weights{f: f, k: e.kern}
	n := cfg.NEmbd
	e.tokEmbd = w.matrix("token_embd.weight", -1, n)
	pos := w.matrix("position_embd.weight", -1, n)
	e.normW = w.vector("token_embd_norm.weight", n)
	e.normB = w.vector("token_embd_norm.bias", n)
	for i := 0; i < cfg.NLayer && w.err == nil; i++ {
		e.blocks = append(e.blocks, w.block(i, cfg))
	}
	if w.err != nil {
		return nil, w.err
	}
	if _, ok := f.Tensor("token_types.weight"); ok {
		types := w.matrix("token_types.weight", -1, n)
		if w.err != nil {
			return nil, w.err
		}
		e.typeEmbd = make([]float32, n)
		if err := e.kern.Dequantize(types.typ, types.row(0), e.typeEmbd); err != nil {
			return nil, fmt.Errorf("encoder: token_types.weight: %w", err)
		}
	}
	cfg.MaxPositions = pos.rows
	e.posEmbd = make([]float32, pos.rows*n)
	if err := e.kern.Dequantize(pos.typ, pos.data, e.posEmbd); err != nil {
		return nil, fmt.Errorf("encoder: position_embd.weight: %w", err)
	}
	if err := e.kern.Dequantize(e.tokEmbd.typ, e.tokEmbd.row(0), make([]float32, n)); err != nil {
		return nil, fmt.Errorf("encoder: token_embd.weight: %w", err)
	}
	cfg.NVocab = e.tokEmbd.rows
	e.cfg = cfg
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	if tok.VocabSize() > cfg.NVocab {
		return nil, invalidf("vocabulary has %d tokens but token_embd.weight only %d rows", tok.VocabSize(), cfg.NVocab)
	}
	e.tok = tok
	return e, nil
}

// Config returns the model's hyperparameters.
func (e *Encoder) Config() Config { return e.cfg }

// Tokenizer returns the model's tokenizer.
func (e *Encoder) Tokenizer() *tokenizer.Tokenizer { return e.tok }

// Tokenize turns text into the ids Embed expects, as llama-embedding does:
// [CLS] … [SEP], with special tokens written in the text recognised.
func (e *Encoder) Tokenize(text string) []int32 {
	return e.tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
}

// Embed runs ids through the encoder as one sequence.
func (e *Encoder) Embed(ids []int32) (Embedding, error) {
	c := e.cfg
	switch {
	case len(ids) == 0:
		return Embedding{}, &InputError{Reason: "no tokens to embed"}
	case len(ids) > c.MaxPositions:
		return Embedding{}, &InputError{Reason: fmt.Sprintf("%d tokens exceed the model's %d positions", len(ids), c.MaxPositions)}
	}
	for i, id := range ids {
		if id < 0 || int(id) >= c.NVocab {
			return Embedding{}, &InputError{Reason: fmt.Sprintf("token %d at index %d is outside the vocabulary of %d", id, i, c.NVocab)}
		}
	}
	x, err := e.embedInput(ids)
	if err != nil {
		return Embedding{}, err
	}
	s := newScratch(c, len(ids))
	for i := range e.blocks {
		e.forwardBlock(&e.blocks[i], x, s)
	}
	n, d := len(ids), c.NEmbd
	res := Embedding{Tokens: make([][]float32, n)}
	for t := range n {
		res.Tokens[t] = x[t*d : (t+1)*d : (t+1)*d]
	}
	res.Pooled = pool(c.Pooling, x, n, d)
	res.Normalized = normalize(res.Pooled)
	return res, nil
}

// embedInput builds the first block's input: LayerNorm(token + type 0 +
// position), summed in that order as llama.cpp does.
func (e *Encoder) embedInput(ids []int32) ([]float32, error) {
	d := e.cfg.NEmbd
	x := make([]float32, len(ids)*d)
	for t, id := range ids {
		row := x[t*d : (t+1)*d]
		if err := e.kern.Dequantize(e.tokEmbd.typ, e.tokEmbd.row(int(id)), row); err != nil {
			return nil, fmt.Errorf("encoder: token_embd.weight: %w", err)
		}
		pos := e.posEmbd[t*d : (t+1)*d]
		for j := range row {
			v := row[j]
			if e.typeEmbd != nil {
				v += e.typeEmbd[j]
			}
			row[j] = pos[j] + v
		}
		layerNorm(row, row, e.normW, e.normB, e.cfg.Eps)
	}
	return x, nil
}

// pool reduces the [n × d] outputs to one vector. Mean pooling multiplies
// each row by 1/n and sums, as llama.cpp's mean matmul does.
func pool(p Pooling, x []float32, n, d int) []float32 {
	out := make([]float32, d)
	if p == PoolingCLS {
		copy(out, x[:d])
		return out
	}
	inv := float32(1) / float32(n)
	for j := range d {
		var s float32
		for t := range n {
			s += x[t*d+j] * inv
		}
		out[j] = s
	}
	return out
}

// normalize scales v to unit length as llama.cpp's common_embd_normalize(v,
// 2): float squares summed in float64, then a float32 factor.
func normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x * x)
	}
	var scale float32
	if sum > 0 {
		scale = float32(1 / math.Sqrt(sum))
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * scale
	}
	return out
}
