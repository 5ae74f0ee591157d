package model

// MLA is multi-head latent attention (deepseek2): keys and values are
// projected through a shared latent of KVLoraRank values per position,
// which is all the cache holds (plus RopeDim rotated key values). The
// query of each head is absorbed into the latent space (attn_k_b), so the
// attention runs as one key/value head of KVLoraRank+RopeDim keys and
// KVLoraRank values, and its per-head output is expanded by attn_v_b. This
// is llama.cpp's MLA path for files with split attn_k_b/attn_v_b tensors.
type MLA struct {
	QLoraRank  int // 0: queries come straight from attn_q (the "lite" models)
	KVLoraRank int
	KeyLen     int // per-head query/key width before absorption: nope + rope
	ValueLen   int // per-head value width after expansion
	RopeDim    int // the rotated tail of each query head and the shared key
}

// nope is the unrotated part of a query head.
func (m MLA) nope() int { return m.KeyLen - m.RopeDim }
