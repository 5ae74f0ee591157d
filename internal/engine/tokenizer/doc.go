// Package tokenizer turns text into token ids and back, the way llama.cpp's
// llama-vocab.cpp does for the vocabularies stored in GGUF files.
//
// It provides three algorithms, chosen by tokenizer.ggml.model:
// SentencePiece ("llama", Kind SPM) with byte fallback, byte-level BPE
// ("gpt2", Kind BPE) with the pre-tokenizer named by tokenizer.ggml.pre, and
// WordPiece ("bert", Kind WPM). The pre-tokenizer regular expressions of
// llama.cpp use Unicode categories and look-aheads that Go's regexp lacks; they
// are implemented here as hand-written linear-time splitters that reproduce
// the splits llama.cpp makes, including the quirks of its category-collapsed
// std::regex fallback.
//
// A Tokenizer is immutable after New or FromGGUF and safe for concurrent use.
// A StreamDecoder is not safe for concurrent use.
//
// The package imports only the standard library and internal/engine/gguf.
package tokenizer
