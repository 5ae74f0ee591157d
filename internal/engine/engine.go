// Package engine is the facade over the native inference engine: it opens a
// GGUF model (tokenizer and weights, whole or as a shard), which the CLI
// and the runner subprocess both do, and runs a plain one-request
// generation loop (Generate) for the CLI. The runner does not use that
// loop: it batches the decode steps of concurrent tasks in its own.
package engine

import (
	"fmt"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/tokenizer"
)

// Options configure how a model is opened.
type Options struct {
	Threads          int // 0 = physical cores
	ExactActivations bool
	// Kernels caps the kernel set: "generic", "avx2" or "neon"
	// (tensor.Capped; config reads it from SKULK_KERNELS); "" uses the best
	// the CPU has.
	Kernels string
	// NoPack keeps the weights as the file stores them (model.Options;
	// config reads it from SKULK_PACK=off).
	NoPack bool
	// Range selects a shard; the zero value means the whole model.
	Range *model.Range
	// CacheType is the K/V cache element type (model.Options.CacheType):
	// "" or "f16", "f32", "q8_0", "q4_0".
	CacheType string
}

// Model is an open GGUF model: its tokenizer and a loaded shard.
type Model struct {
	File   *gguf.File
	Tok    *tokenizer.Tokenizer
	Shard  *model.Shard
	Config model.Config
}

// Open opens the GGUF file at path and loads its tokenizer and weights.
func Open(path string, opt Options) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := load(f, opt)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func load(f *gguf.File, opt Options) (*Model, error) {
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, err
	}
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return nil, err
	}
	r := model.Whole(cfg.NLayer)
	if opt.Range != nil {
		r = *opt.Range
	}
	s, err := model.Load(f, r, model.Options{Threads: opt.Threads, ExactActivations: opt.ExactActivations, Kernels: opt.Kernels, NoPack: opt.NoPack, CacheType: opt.CacheType})
	if err != nil {
		return nil, err
	}
	return &Model{File: f, Tok: tok, Shard: s, Config: s.Config}, nil
}

// OpenTokenizer opens only the vocabulary of a GGUF file (which may hold no
// tensors at all).
func OpenTokenizer(path string) (*tokenizer.Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Close stops the shard's workers and unmaps the file.
func (m *Model) Close() error {
	m.Shard.Close()
	return m.File.Close()
}
