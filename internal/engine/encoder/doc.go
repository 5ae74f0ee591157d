// Package encoder runs BERT-style encoder models from GGUF files
// (general.architecture "bert") and turns token ids into sentence
// embeddings, the way llama.cpp's llama-embedding does.
//
// The forward pass is the textbook encoder: token embedding plus the token
// type 0 embedding plus the absolute position embedding, a LayerNorm, then
// per block bidirectional multi-head attention, residual, LayerNorm, a GELU
// feed-forward, residual, LayerNorm. The last block's per-token outputs are
// pooled (mean over all tokens including [CLS] and [SEP], or the [CLS] row,
// as bert.pooling_type says) and L2-normalised.
//
// The arithmetic follows ggml's CPU backend where that changes the numbers:
// GELU goes through ggml's F16 lookup table of the tanh approximation,
// LayerNorm sums in float64, softmax sums exp in float64, and the final
// normalisation is llama.cpp's common_embd_normalize. Weights of any type the
// tensor package can dot in F32 are accepted; activations stay F32 (llama.cpp
// rounds them for non-F32 weights, so only F32 weights reproduce it closely).
//
// Open refuses every architecture other than bert with an *UnsupportedError,
// and a file whose tensors are missing or misshapen with an error wrapping
// ErrInvalidModel. Embed reports bad input (no tokens, ids outside the
// vocabulary, more tokens than position embeddings) as an *InputError.
//
// An Encoder is immutable after Open and safe for concurrent use; each Embed
// call allocates its own activations. Its weights alias the gguf.File, which
// must stay open while the Encoder is used.
//
// The package imports only the standard library and other
// internal/engine packages (gguf, tensor, tokenizer).
package encoder
