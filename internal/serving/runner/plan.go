package runner

// want is what one live sequence asks of the next step: its decode step
// (its next token is ready), or the rest of its prompt (left tokens not yet
// read). A sequence asks one or the other, or nothing while its task
// samples.
type want struct {
	decode bool
	left   int
}

// planStep is the pure core of continuous batching: how many rows each
// sequence (wants, in arrival order) takes in the next step, 0 for none.
// Every ready decode step goes in first, oldest first, so that running
// streams advance at every step; the rest of the step's budget of rows goes
// to prompts, oldest first, at most chunk tokens of each, so that a long
// prompt is read a chunk at a time between the running streams' tokens
// instead of stalling them; all prompts together take at most prompt rows
// (the pacer's limit while streams run). chunk ≤ 0 reads a prompt whole,
// in a step of its own (no chunked prefill: the running streams wait for
// it).
func planStep(wants []want, budget, chunk, prompt int) []int {
	budget = max(budget, 1)
	rows := make([]int, len(wants))
	if chunk <= 0 {
		for i, w := range wants {
			if !w.decode && w.left > 0 {
				rows[i] = w.left
				return rows
			}
		}
	}
	used := 0
	for i, w := range wants {
		if w.decode && used < budget {
			rows[i] = 1
			used++
		}
	}
	for i, w := range wants {
		if w.decode || w.left <= 0 || used >= budget || chunk <= 0 || prompt <= 0 {
			continue
		}
		rows[i] = min(w.left, chunk, budget-used, prompt)
		used += rows[i]
		prompt -= rows[i]
	}
	return rows
}
