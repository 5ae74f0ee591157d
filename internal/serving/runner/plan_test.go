package runner

import (
	"slices"
	"testing"
)

func TestPlanStep(t *testing.T) {
	d := want{decode: true}
	p := func(n int) want { return want{left: n} }
	for _, c := range []struct {
		name                  string
		wants                 []want
		budget, chunk, prompt int
		rows                  []int
	}{
		{"nothing", []want{{}, {}}, 512, 256, 512, []int{0, 0}},
		{"decodes only", []want{d, {}, d}, 512, 256, 512, []int{1, 0, 1}},
		{"a prompt alone is read a chunk at a time", []want{p(2048)}, 512, 256, 512, []int{256}},
		{"a short prompt whole", []want{p(40)}, 512, 256, 512, []int{40}},
		{"decodes ride with a chunk", []want{d, p(1000), d}, 512, 256, 512, []int{1, 256, 1}},
		{"two prompts share the budget, oldest first", []want{p(300), p(300), d}, 512, 256, 512, []int{256, 255, 1}},
		{"the budget caps the chunk", []want{d, d, d, p(1000)}, 130, 256, 130, []int{1, 1, 1, 127}},
		{"decodes before prompts even when they fill the budget", []want{p(10), d, d}, 2, 256, 2, []int{0, 1, 1}},
		{"decodes beyond the budget wait, oldest first", []want{d, d, d}, 2, 256, 2, []int{1, 1, 0}},
		{"unchunked: the oldest prompt whole, alone", []want{d, p(3000), p(5)}, 512, 0, 512, []int{0, 3000, 0}},
		{"unchunked with no prompt: decodes", []want{d, {}, d}, 512, 0, 512, []int{1, 0, 1}},
		{"the pacer's limit caps the prompt rows", []want{d, p(1000), d}, 512, 256, 3, []int{1, 3, 1}},
		{"the limit is shared by the prompts, oldest first", []want{p(2), p(10), d, p(10)}, 512, 256, 5, []int{2, 3, 1, 0}},
		{"a limit of 0: decode rows alone", []want{d, p(1000), d}, 512, 256, 0, []int{1, 0, 1}},
		{"unchunked ignores the limit", []want{d, p(3000)}, 512, 0, 0, []int{0, 3000}},
	} {
		if got := planStep(c.wants, c.budget, c.chunk, c.prompt); !slices.Equal(got, c.rows) {
			t.Errorf("%s: planStep(%v, %d, %d, %d) = %v, want %v", c.name, c.wants, c.budget, c.chunk, c.prompt, got, c.rows)
		}
	}
}
