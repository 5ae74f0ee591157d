package placement

import "testing"

// TestKVCacheTypeArithmetic: each cache type's bytes per token and layer
// (K and V of every KV head: fp16 2 bytes an element, f32 4, q8_0 34 and
// q4_0 18 bytes per 32-element block), and what that buys: on the same
// node, the context ceiling grows by the ratio of the per-token costs.
func TestKVCacheTypeArithmetic(t *testing.T) {
	tests := []struct {
		kvHeads, headDim int
		typ              string
		want             int64
	}{
		{8, 128, "", 2 * 8 * 128 * 2},
		{8, 128, KVCacheF16, 4096},
		{8, 128, KVCacheF32, 8192},
		{8, 128, KVCacheQ8_0, 2 * 8 * 4 * 34}, // 2176
		{8, 128, KVCacheQ4_0, 2 * 8 * 4 * 18}, // 1152
		{2, 64, KVCacheQ8_0, 2 * 2 * 2 * 34},
		{1, 80, KVCacheQ4_0, 2 * 1 * 3 * 18}, // a partial block counts whole
		{0, 128, KVCacheQ8_0, 0},
	}
	for _, tt := range tests {
		if got := KVBytesPerTokenLayer(tt.kvHeads, tt.headDim, tt.typ); got != tt.want {
			t.Errorf("KVBytesPerTokenLayer(%d, %d, %q) = %d, want %d", tt.kvHeads, tt.headDim, tt.typ, got, tt.want)
		}
	}

	nodes := []Node{cpu("a", 16*GiB)}
	ceiling := map[string]int{}
	for _, typ := range []string{KVCacheF16, KVCacheQ8_0, KVCacheQ4_0} {
		m := llama()
		m.ContextLength = 1 << 22 // the memory bounds the window, not the card
		m.KVBytesPerTokenLayer = KVBytesPerTokenLayer(8, 128, typ)
		p, err := Plan(m, nodes, Request{})
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		// The ceiling is the most whole tokens of KV that fit strictly
		// beside the fixed bytes.
		fixed := fixedBytes(32*200*MiB + 250*MiB + 250*MiB)
		want := (16*GiB - 1 - fixed) / (32 * m.KVBytesPerTokenLayer)
		if int64(p.ContextCeiling) != want {
			t.Errorf("%s: context ceiling %d, want %d", typ, p.ContextCeiling, want)
		}
		ceiling[typ] = p.ContextCeiling
	}
	if r := float64(ceiling[KVCacheQ8_0]) / float64(ceiling[KVCacheF16]); r < 1.88 || r > 1.89 {
		t.Errorf("q8_0 holds %.3f× the fp16 context, want 64/34", r)
	}
	if r := float64(ceiling[KVCacheQ4_0]) / float64(ceiling[KVCacheF16]); r < 3.55 || r > 3.56 {
		t.Errorf("q4_0 holds %.3f× the fp16 context, want 64/18", r)
	}
}
