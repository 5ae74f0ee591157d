package sequence

import (
	"context"
	"errors"
	"time"

	"github.com/skulk/skulk/internal/engine/sample"
)

// Sequencer runs prepared sequences to their end. Generate computes spec's
// prompt and samples its tokens, calling emit with each one delivered in
// order. An end-of-generation token ends the sequence and is not emitted;
// emit returning ErrStop ends it after that token as one would (finish
// "stop", no error); any other error from emit, or ctx ending, stops it
// with that error. The Stats count what was done even then.
// Implementations are safe for concurrent use.
type Sequencer interface {
	Generate(ctx context.Context, spec Spec, emit func(Token) error) (Stats, error)
}

// Spec is a prepared sequence: prompt tokens and how to continue them.
type Spec struct {
	Prompt []int32
	// MaxTokens caps the generated tokens; 0 = until an end of
	// generation or the context is full (see Budget).
	MaxTokens int
	Sample    sample.Params
	// Context caps prompt plus generated tokens; 0 = the sequencer's own
	// (the model's trained length, or its configured window).
	Context int
	// Logprobs asks for each token's log-probability and TopLogprobs most
	// likely alternatives (Token.Logprob, Token.Top).
	Logprobs    bool
	TopLogprobs int
	// Constraint, when set, restricts what may be sampled (a grammar) and
	// is advanced by every token emitted, so its owner can ask it
	// afterwards whether the value is complete. A sequencer that samples
	// elsewhere builds its own copy from ConstraintSource (a JSON schema),
	// which must then be set too.
	Constraint       Constraint
	ConstraintSource []byte
	// Trace asks a sequencer of several ranks for each rank's timings
	// (Stats.Ranks).
	Trace bool
	// Admitted, when set, is called once, on Generate's goroutine, when
	// the sequence is taken in and before its prompt is computed, with
	// how many prompt tokens a prefix cache holds (Stats.CachedTokens).
	Admitted func(cached int)
}

// RankTiming is what one rank of a split model did for a traced sequence:
// when it opened the sequence and released it (by its own clock), and the
// time its prefill chunks and the decode steps the sequence was in kept
// it busy.
type RankTiming struct {
	Rank        int
	Opened      time.Time
	Released    time.Time
	PrefillRows int
	PrefillBusy time.Duration
	DecodeSteps int
	DecodeBusy  time.Duration
}

// Constraint restricts what may be generated; grammar.Constraint is one.
type Constraint interface {
	sample.Constraint
	// Accept advances the constraint by the token drawn; an error ends the
	// generation.
	Accept(id int32) error
}

// Token is one generated token. With Spec.Logprobs, Logprob is its
// log-probability and Top its most likely alternatives (most likely first;
// fewer when fewer logits were finite), both under the softmax of the
// model's raw logits, before any constraint or penalty.
type Token struct {
	ID      int32
	Logprob float32
	Top     []sample.Logprob
}

// Finish reasons (Stats.FinishReason).
const (
	FinishStop   = "stop"   // an end-of-generation token, or emit returned ErrStop
	FinishLength = "length" // MaxTokens or the context window reached
)

// ErrStop, returned by emit, ends the sequence after that token as an
// end-of-generation token would: finish reason "stop" and no error. The
// runner's stop sequences use it.
var ErrStop = errors.New("sequence: stop")

// Stats describe a finished sequence.
type Stats struct {
	PromptTokens    int
	GeneratedTokens int
	FinishReason    string
	// CachedTokens counts the prompt tokens a prefix cache held, which
	// were not computed again.
	CachedTokens int
	Prefill      time.Duration
	Decode       time.Duration // from the first sampled token to the last
	// DraftTokens counts the tokens speculative decoding drafted and
	// verified; DraftAccepted those of them the sampler drew.
	DraftTokens, DraftAccepted int
	// Ranks are a traced sequence's timings on each rank, in rank order,
	// from a sequencer of several ranks (Spec.Trace).
	Ranks []RankTiming
}

// PrefillTokensPerSecond is the prompt processing rate.
func (s Stats) PrefillTokensPerSecond() float64 {
	return rate(s.PromptTokens, s.Prefill)
}

// DecodeTokensPerSecond is the generation rate after the first token.
func (s Stats) DecodeTokensPerSecond() float64 {
	return rate(s.GeneratedTokens-1, s.Decode)
}

func rate(n int, d time.Duration) float64 {
	if n <= 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
