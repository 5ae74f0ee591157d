package prompt

import (
	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/sequence"
	"github.com/skulk/skulk/internal/serving/request"
)

// Answer is a prepared request's answer as its tokens arrive, from
// whichever sequencer computes them: their text, cut at stop sequences,
// parsed for reasoning and tool calls, held to the grammar of structured
// output, with logprobs; and, at the end, the finish reason. It is owned
// by one task.
type Answer struct {
	spec sequence.Spec
	st   *streamer
	con  *constrained
	text *engine.TextStream
}

// Start begins p's answer to req, whose chunks go to emit (not the last:
// the caller sends it, with Finish's reason).
func Start(md *Model, p Prepared, req request.Request, emit func(request.Chunk)) (*Answer, error) {
	con, emit, err := p.structured.start(md, emit)
	if err != nil {
		return nil, err
	}
	st := newStreamer(md.M.Tok, p, p.structured.sampling(req.Sampling), emit)
	a := &Answer{st: st, con: con, text: engine.NewTextStream(md.M.Tok, p.params.Preserved),
		spec: sequence.Spec{Prompt: p.Prompt, MaxTokens: p.params.MaxTokens, Sample: p.params.Sample, Context: md.Context,
			Logprobs: st.logprobs, TopLogprobs: st.top}}
	if con != nil {
		a.spec.Constraint, a.spec.ConstraintSource = con.con, p.structured.source
	}
	return a, nil
}

// Spec is the sequence to run.
func (a *Answer) Spec() sequence.Spec { return a.spec }

// Token takes the sequence's next token (a sequence.Sequencer's emit); it
// returns sequence.ErrStop when a stop sequence ends the answer.
func (a *Answer) Token(t sequence.Token) error { return a.st.token(t, a.text.Push(t.ID)) }

// Finish flushes what is held back and tells how the answer ended, given
// how its sequence did (sequence.FinishStop or FinishLength): the finish
// reason, and the stop sequence that ended it, if one did. This is the one
// place a finish reason is decided, whoever computed the tokens.
func (a *Answer) Finish(sequenceFinish string) (finish, stop string, err error) {
	if tail := a.text.Flush(); tail != "" && !a.st.stop.Stopped() {
		a.st.push(tail) // a stop sequence it completes is told by Matched
	}
	finish = request.FinishLength
	if sequenceFinish == sequence.FinishStop {
		finish = request.FinishStop
	}
	madeCalls := a.st.finish()
	if stop = a.st.stop.Matched(); stop != "" {
		// A stop sequence held back until the end still ends the text
		// rather than the length limit.
		finish = request.FinishStop
	}
	if madeCalls && finish == request.FinishStop {
		finish = request.FinishToolCalls
	}
	finish, err = a.con.finish(finish)
	return finish, stop, err
}
