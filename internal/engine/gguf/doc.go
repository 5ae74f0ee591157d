// Package gguf reads and writes GGUF files (versions 2 and 3), the container
// llama.cpp uses for model weights and metadata.
//
// The reader treats the file as hostile: every length, count, offset and
// dimension is checked against the bytes that remain and against a stated
// limit (limits.go: nesting depth, counts, string and header sizes, tensor
// bytes) before anything is allocated from it, and every allocation is
// charged to a budget of ParseBudget(file size), so a truncated or crafted
// file yields a *FormatError naming the field (wrapping a *LimitError for a
// passed limit, errors.Is ErrLimit), never a panic and never more memory
// than a small multiple of its header. Tensor data is memory-mapped and returned as sub-slices of the
// mapping, so loading a shard touches only the pages of the tensors it uses.
//
// Layout (all integers little-endian):
//
//	magic "GGUF" | version u32 | tensor_count u64 | kv_count u64
//	kv_count × { key string | value_type u32 | value }
//	tensor_count × { name string | n_dims u32 | dims u64×n_dims | type u32 | offset u64 }
//	padding to general.alignment (default 32)
//	tensor data; each tensor's offset is relative to the data start and aligned,
//	and no two tensors share a byte (a file where they do fails with ErrOverlap)
//
// A string is a u64 byte length followed by the bytes; an array is an element
// type u32, a u64 count and the elements (arrays may nest).
package gguf
