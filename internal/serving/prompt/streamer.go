package prompt

import (
	"github.com/skulk/skulk/internal/engine/output"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/sequence"
	"github.com/skulk/skulk/internal/engine/tokenizer"
	"github.com/skulk/skulk/internal/serving/request"
)

// streamer turns generated tokens into chunks: text cut at stop sequences,
// split into content, reasoning and tool calls for chat requests, with
// logprobs when asked. It is owned by one task.
type streamer struct {
	tok      *tokenizer.Tokenizer
	emit     func(request.Chunk)
	stop     *output.StopMatcher
	parser   *output.Parser // nil for raw completions
	logprobs bool
	top      int
	lps      []request.TokenLogprob // not yet attached to a chunk
	calls    int
}

func newStreamer(tok *tokenizer.Tokenizer, p Prepared, s request.Sampling, emit func(request.Chunk)) *streamer {
	st := &streamer{tok: tok, emit: emit, stop: output.NewStopMatcher(s.Stop), logprobs: s.Logprobs || s.TopLogprobs > 0, top: s.TopLogprobs}
	if p.chat {
		// NewParser fails only on a bad Config, which renderChat does not make.
		if parser, err := output.NewParser(p.parserCfg); err == nil {
			st.parser = parser
		}
	}
	return st
}

// token takes a generated token and the text it completes; it returns
// sequence.ErrStop when a stop sequence ends the generation.
func (s *streamer) token(t sequence.Token, text string) error {
	if s.stop.Stopped() {
		return sequence.ErrStop // only the held-back tail comes after a stop
	}
	if s.logprobs {
		s.lps = append(s.lps, s.logprobEntry(t.ID, t.Logprob, t.Top))
	}
	return s.push(text)
}

// push streams a token's text, cut at a stop sequence.
func (s *streamer) push(t string) error {
	text, stopped := s.stop.Push(t)
	s.text(text)
	if stopped {
		return sequence.ErrStop
	}
	return nil
}

// finish flushes whatever is held and reports whether any tool call was made.
func (s *streamer) finish() (madeCalls bool) {
	if !s.stop.Stopped() {
		s.text(s.stop.Flush())
	}
	if s.parser != nil {
		s.events(s.parser.Close())
	}
	if len(s.lps) > 0 {
		s.emit(request.Chunk{Kind: request.ChunkDelta, Logprobs: s.lps})
		s.lps = nil
	}
	return s.calls > 0
}

func (s *streamer) text(text string) {
	if text == "" {
		return
	}
	if s.parser == nil {
		s.delta(request.Chunk{Kind: request.ChunkDelta, Content: text})
		return
	}
	s.events(s.parser.Push(text))
}

func (s *streamer) events(evs []output.Event) {
	for _, ev := range output.Coalesce(evs) {
		switch ev.Kind {
		case output.Content:
			s.delta(request.Chunk{Kind: request.ChunkDelta, Content: ev.Text})
		case output.Reasoning:
			s.delta(request.Chunk{Kind: request.ChunkDelta, Reasoning: ev.Text})
		case output.Call:
			s.calls++
			c := ev.ToolCall
			s.emit(request.Chunk{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}})
		}
	}
}

// delta emits a text chunk carrying the logprobs of the tokens so far.
func (s *streamer) delta(c request.Chunk) {
	c.Logprobs, s.lps = s.lps, nil
	s.emit(c)
}

// logprobEntry is a token's logprob as the API reports it: its piece, its
// log-probability and its top alternatives'.
func (s *streamer) logprobEntry(id int32, logprob float32, top []sample.Logprob) request.TokenLogprob {
	piece := s.tok.Piece(id, false)
	lp := request.TokenLogprob{Token: piece, Bytes: []byte(piece), Logprob: finiteLogprob(logprob)}
	for _, t := range top {
		p := s.tok.Piece(t.ID, false)
		lp.Top = append(lp.Top, request.TopLogprob{Token: p, Bytes: []byte(p), Logprob: finiteLogprob(t.Logprob)})
	}
	return lp
}

// MinLogprob stands in for the log-probability of a token that cannot occur
// (-Inf, which JSON cannot carry), as OpenAI reports it.
const MinLogprob = -9999

func finiteLogprob(v float32) float32 {
	if v != v || v < MinLogprob {
		return MinLogprob
	}
	return v
}
