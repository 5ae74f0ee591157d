package sequence

import "fmt"

// Budget is how many tokens a sequence of a promptLen-token prompt may
// generate: maxTokens (0 = no cap) within what a window of context tokens
// leaves after the prompt. A prompt that fills the window, or a negative
// cap, is an error.
func Budget(promptLen, maxTokens, context int) (int, error) {
	if maxTokens < 0 || promptLen >= context {
		return 0, fmt.Errorf("a %d-token prompt with max tokens %d does not fit the %d-token context", promptLen, maxTokens, context)
	}
	budget := context - promptLen
	if maxTokens > 0 && maxTokens < budget {
		budget = maxTokens
	}
	return budget, nil
}

// Verdict is what a generation loop does with a token it sampled.
type Verdict uint8

const (
	// Continue: emit the token and compute the step after it.
	Continue Verdict = iota + 1
	// Last: emit the token; the budget is spent (finish "length").
	Last
	// EndOfGeneration: the sequence is done (finish "stop"); the token is
	// not emitted.
	EndOfGeneration
)

// Judge decides a sampled token's fate; every sequencer's loop asks it, so
// that a sequence stops at the same token however its model is laid out.
// eog says whether the token ends generation; generated counts the tokens
// emitted before it, of budget (see Budget).
func Judge(eog bool, generated, budget int) Verdict {
	switch {
	case eog:
		return EndOfGeneration
	case generated+1 >= budget:
		return Last
	}
	return Continue
}
