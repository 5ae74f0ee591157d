package encoder

import (
	"fmt"
	"strconv"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// Pooling is how per-token outputs become one sentence vector. The values
// are llama.cpp's llama_pooling_type numbers (bert.pooling_type).
type Pooling int

const (
	// PoolingMean averages the outputs of every token, [CLS] and [SEP]
	// included.
	PoolingMean Pooling = 1
	// PoolingCLS takes the output of the first token ([CLS]).
	PoolingCLS Pooling = 2
)

func (p Pooling) String() string {
	switch p {
	case PoolingMean:
		return "mean"
	case PoolingCLS:
		return "cls"
	case 0:
		return "none"
	case 3:
		return "last"
	case 4:
		return "rank"
	default:
		return strconv.Itoa(int(p))
	}
}

// Config is the encoder's hyperparameters, read from GGUF metadata.
type Config struct {
	NLayer       int
	NEmbd        int
	NHead        int
	HeadDim      int // NEmbd / NHead
	NFF          int
	NVocab       int // rows of token_embd.weight
	MaxPositions int // rows of position_embd.weight: the longest input
	Eps          float32
	Pooling      Pooling
}

// maxDim bounds every metadata size so that products of two of them cannot
// overflow an int on any platform Go supports.
const maxDim = 1 << 24

// ReadConfig reads the hyperparameters of a bert GGUF. Sizes that depend on
// tensors (NVocab, MaxPositions) are filled in by Open.
func ReadConfig(f *gguf.File) (Config, error) {
	if arch := f.Architecture(); arch != "bert" {
		return Config{}, &UnsupportedError{What: "architecture", Value: strconv.Quote(arch), Supported: "bert"}
	}
	var c Config
	var err error
	need := func(key string, dst *int) {
		if err != nil {
			return
		}
		v, ok := f.Uint(key)
		switch {
		case !ok:
			err = invalidf("missing or non-integer metadata %s", key)
		case v < 1 || v > maxDim:
			err = invalidf("metadata %s = %d is out of range", key, v)
		default:
			*dst = int(v)
		}
	}
	need("bert.block_count", &c.NLayer)
	need("bert.embedding_length", &c.NEmbd)
	need("bert.feed_forward_length", &c.NFF)
	need("bert.attention.head_count", &c.NHead)
	if err != nil {
		return Config{}, err
	}
	if c.NEmbd%c.NHead != 0 {
		return Config{}, invalidf("embedding length %d is not a multiple of head count %d", c.NEmbd, c.NHead)
	}
	c.HeadDim = c.NEmbd / c.NHead
	if v, ok := f.Uint("bert.attention.head_count_kv"); ok && int(v) != c.NHead {
		return Config{}, &UnsupportedError{What: "head_count_kv", Value: strconv.FormatUint(v, 10), Supported: fmt.Sprintf("equal to head_count, %d", c.NHead)}
	}
	if causal, ok := f.Bool("bert.attention.causal"); ok && causal {
		return Config{}, &UnsupportedError{What: "attention", Value: "causal", Supported: "bidirectional"}
	}
	eps, ok := f.Float("bert.attention.layer_norm_epsilon")
	if !ok || !(eps > 0 && eps < 1) {
		return Config{}, invalidf("missing or out-of-range metadata bert.attention.layer_norm_epsilon")
	}
	c.Eps = float32(eps)
	if v, ok := f.Int("bert.pooling_type"); ok {
		c.Pooling = Pooling(v)
	}
	return c, nil
}
