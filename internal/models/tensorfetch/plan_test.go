package tensorfetch

import (
	"slices"
	"testing"
)

func TestNeeded(t *testing.T) {
	untied := []string{"token_embd.weight", "rope_freqs.weight",
		"blk.0.attn_q.weight", "blk.0.ffn_down.weight", "blk.1.attn_q.weight", "blk.2.attn_q.weight", "blk.10.attn_q.weight",
		"output_norm.weight", "output.weight"}
	tied := []string{"token_embd.weight", "blk.0.attn_q.weight", "blk.1.attn_q.weight", "output_norm.weight"}
	for _, tc := range []struct {
		name  string
		names []string
		r     Range
		want  []string
	}{
		{"first rank", untied, Range{Start: 0, End: 2, First: true},
			[]string{"token_embd.weight", "rope_freqs.weight", "blk.0.attn_q.weight", "blk.0.ffn_down.weight", "blk.1.attn_q.weight"}},
		{"last rank", untied, Range{Start: 2, End: 11, Last: true},
			[]string{"rope_freqs.weight", "blk.2.attn_q.weight", "blk.10.attn_q.weight", "output_norm.weight", "output.weight"}},
		{"middle rank", untied, Range{Start: 1, End: 2},
			[]string{"rope_freqs.weight", "blk.1.attn_q.weight"}},
		{"blk.1 is not blk.10", untied, Range{Start: 10, End: 11},
			[]string{"rope_freqs.weight", "blk.10.attn_q.weight"}},
		{"whole model", untied, Range{Start: 0, End: 11, First: true, Last: true}, untied},
		{"tied last rank takes the embedding as its head", tied, Range{Start: 1, End: 2, Last: true},
			[]string{"token_embd.weight", "blk.1.attn_q.weight", "output_norm.weight"}},
		{"tied first rank", tied, Range{Start: 0, End: 1, First: true},
			[]string{"token_embd.weight", "blk.0.attn_q.weight"}},
		{"an unnumbered block tensor is taken", []string{"blk.x.weight", "blk.3.a"}, Range{Start: 0, End: 1},
			[]string{"blk.x.weight"}},
		{"empty range, no ends", untied, Range{Start: 1, End: 1}, []string{"rope_freqs.weight"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Needed(tc.names, tc.r); !slices.Equal(got, tc.want) {
				t.Fatalf("Needed(%+v) = %q, want %q", tc.r, got, tc.want)
			}
		})
	}
}
