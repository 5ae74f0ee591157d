package tensorfetch

import (
	"strconv"
	"strings"
)

// Range is a stage's share of a model: blocks [Start, End), the token
// embedding when First, the output norm and head when Last.
type Range struct {
	Start, End  int
	First, Last bool
}

// Needed returns, in file order, the tensors of names that a stage with
// range r loads: its blocks' tensors (blk.N.*), token_embd when First (and
// when Last on a tied model: no output.weight, so the head is the
// embedding), output and output_norm when Last, and every other tensor
// outside the blocks (small ones such as rope_freqs, which any stage may
// read).
func Needed(names []string, r Range) []string {
	tied := true
	for _, n := range names {
		if n == "output.weight" {
			tied = false
		}
	}
	var out []string
	for _, n := range names {
		need := false
		switch {
		case strings.HasPrefix(n, "blk."):
			b, ok := blockOf(n)
			need = !ok || (b >= r.Start && b < r.End) // a block we cannot number: take it
		case n == "token_embd.weight":
			need = r.First || (r.Last && tied)
		case strings.HasPrefix(n, "output.") || strings.HasPrefix(n, "output_norm."):
			need = r.Last
		default:
			need = true
		}
		if need {
			out = append(out, n)
		}
	}
	return out
}

// blockOf is N of a tensor named blk.N.*.
func blockOf(name string) (int, bool) {
	rest := strings.TrimPrefix(name, "blk.")
	i := strings.IndexByte(rest, '.')
	if i <= 0 {
		return 0, false
	}
	b, err := strconv.Atoi(rest[:i])
	return b, err == nil && b >= 0
}
