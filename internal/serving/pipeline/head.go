package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/sequence"
)

// Request is one generation for rank 0.
type Request struct {
	Prompt []int32
	// MaxTokens caps the generated tokens; 0 means until an end of
	// generation or the context is full.
	MaxTokens int
	Sample    sample.Params
	// Context caps prompt plus generated tokens; 0 means HeadConfig.Context.
	Context int
	// Logprobs asks for each token's log-probability and TopLogprobs (at
	// most MaxTopLogprobs) most likely alternatives, as Token reports them;
	// TopLogprobs > 0 implies Logprobs.
	Logprobs    bool
	TopLogprobs int
	// Constraint is the source of the constraint the last rank samples
	// under (see StageConfig.Constrain), at most MaxConstraintBytes; empty
	// means none.
	Constraint []byte
	// Trace asks every rank for its timings of the sequence
	// (Sequence.Timings).
	Trace bool
}

// Token is a generated token. When the request asked for logprobs,
// Logprob is its log-probability and Top its most likely alternatives
// (most likely first; fewer when fewer logits were finite), both under the
// softmax of the model's raw logits, before any constraint or penalty.
type Token struct {
	ID      int32
	Logprob float32
	Top     []sample.Logprob
}

// Finish says why a sequence ended normally.
type Finish string

// Finish reasons, as the engine's.
const (
	FinishStop   Finish = "stop"   // an end-of-generation token
	FinishLength Finish = "length" // MaxTokens or the context reached
)

// ErrEmptyPrompt refuses a request with no prompt tokens.
var ErrEmptyPrompt = errors.New("pipeline: the prompt has no tokens")

// Sequence is a submitted generation: its tokens as they are sampled, and
// its end. Its methods are safe for concurrent use.
type Sequence struct {
	id     uint64
	stage  *Stage
	notify chan struct{} // a token or the end arrived; capacity 1

	mu     sync.Mutex
	buf    []Token // guarded by mu: delivered and not yet read
	ended  bool    // guarded by mu
	finish Finish  // guarded by mu
	err    error   // guarded by mu

	// timings receives a traced sequence's report once, after its end.
	timings chan []sequence.RankTiming
}

// Timings waits for a traced sequence's timings on every rank, which
// follow its end by one trip around the ranks, and returns them in rank
// order; nil for a sequence not traced, or when ctx ends first (a stage
// that stopped never reports).
func (q *Sequence) Timings(ctx context.Context) []sequence.RankTiming {
	if q.timings == nil {
		return nil
	}
	select {
	case t := <-q.timings:
		return t
	case <-ctx.Done():
		return nil
	case <-q.stage.done:
		return nil
	}
}

// ID is the sequence's id on the pipeline's objects.
func (q *Sequence) ID() uint64 { return q.id }

// Next returns the next generated token's id; see NextToken.
func (q *Sequence) Next(ctx context.Context) (int32, error) {
	t, err := q.NextToken(ctx)
	return t.ID, err
}

// NextToken returns the next generated token. After the last one it
// returns io.EOF (Finish then says why), or the error that ended the
// sequence: ErrCancelled, ErrStopped, ErrNoToken, ErrConstraint or a
// *FaultError.
func (q *Sequence) NextToken(ctx context.Context) (Token, error) {
	for {
		q.mu.Lock()
		if len(q.buf) > 0 {
			t := q.buf[0]
			q.buf = q.buf[1:]
			q.mu.Unlock()
			return t, nil
		}
		if q.ended {
			err := q.err
			q.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return Token{ID: sample.NoToken}, err
		}
		q.mu.Unlock()
		select {
		case <-q.notify:
		case <-ctx.Done():
			return Token{ID: sample.NoToken}, ctx.Err()
		}
	}
}

// All reads every remaining token; err is nil when the sequence finished
// normally.
func (q *Sequence) All(ctx context.Context) ([]int32, error) {
	var out []int32
	for {
		t, err := q.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, t)
	}
}

// Finish is why the sequence ended normally; empty until it has.
func (q *Sequence) Finish() Finish {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.finish
}

// Cancel ends the sequence without waiting: it leaves the admission
// queue, or its caches are released on every rank, as soon as rank 0's
// current step is done. Tokens delivered before can still be read; then
// Next reports ErrCancelled. Cancelling an ended sequence does nothing.
func (q *Sequence) Cancel() { q.stage.cancel(q.id) }

func (q *Sequence) push(t Token) {
	q.mu.Lock()
	q.buf = append(q.buf, t)
	q.mu.Unlock()
	q.wake()
}

func (q *Sequence) end(f Finish, err error) {
	q.mu.Lock()
	if !q.ended {
		q.ended, q.finish, q.err = true, f, err
	}
	q.mu.Unlock()
	q.wake()
}

func (q *Sequence) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// Submit queues a generation on rank 0. It checks the request at once;
// the sequence then waits for a slot (in submission order) and generates.
// ctx bounds only the hand-over to the stage.
func (s *Stage) Submit(ctx context.Context, req Request) (*Sequence, error) {
	if !s.first {
		return nil, ErrNotHead
	}
	spec, err := s.spec(req)
	if err != nil {
		return nil, err
	}
	q := &Sequence{id: s.nextID.Add(1), stage: s, notify: make(chan struct{}, 1)}
	if req.Trace {
		q.timings = make(chan []sequence.RankTiming, 1)
	}
	prompt := slices.Clone(req.Prompt)
	if err := s.do(ctx, func(w *worker) {
		w.queue = append(w.queue, &waiting{q: q, prompt: prompt, spec: spec})
		w.admit()
	}); err != nil {
		return nil, err
	}
	return q, nil
}

// spec checks a request and sizes its sequence by sequence.Budget, as
// engine.Model.Generate does.
func (s *Stage) spec(req Request) (Spec, error) {
	n := len(req.Prompt)
	if n == 0 {
		return Spec{}, ErrEmptyPrompt
	}
	for i, t := range req.Prompt {
		if t < 0 || int(t) >= s.nVocab {
			return Spec{}, fmt.Errorf("pipeline: prompt token %d at position %d is outside the vocabulary of %d", t, i, s.nVocab)
		}
	}
	if err := req.Sample.Validate(); err != nil {
		return Spec{}, err
	}
	if req.TopLogprobs < 0 || req.TopLogprobs > MaxTopLogprobs {
		return Spec{}, fmt.Errorf("pipeline: %d top logprobs (0 to %d)", req.TopLogprobs, MaxTopLogprobs)
	}
	if len(req.Constraint) > MaxConstraintBytes {
		return Spec{}, fmt.Errorf("pipeline: a constraint of %d bytes (at most %d)", len(req.Constraint), MaxConstraintBytes)
	}
	ctxLen := cmpOr(req.Context, cmpOr(s.cfg.Head.Context, s.cfg.Shard.Config.ContextLength))
	budget, err := sequence.Budget(n, req.MaxTokens, ctxLen)
	if err != nil {
		return Spec{}, fmt.Errorf("pipeline: %w", err)
	}
	spec := Spec{PromptLen: n, Capacity: n + budget, Sample: req.Sample, Trace: req.Trace,
		Logprobs: req.Logprobs || req.TopLogprobs > 0, TopLogprobs: req.TopLogprobs, Constraint: slices.Clone(req.Constraint)}
	return spec, spec.validate()
}

// admit gives free slots to waiting sequences, oldest first: each opens
// on every rank and its prompt is queued as prefill chunks.
func (w *worker) admit() {
	for len(w.live) < w.s.slots && len(w.queue) > 0 {
		wt := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		id := wt.q.id
		w.live[id] = &headSeq{q: wt.q, promptLen: wt.spec.PromptLen, budget: wt.spec.Capacity - wt.spec.PromptLen, records: wt.spec.records()}
		w.pending = append(w.pending, item{kind: KindOpen, seq: id, spec: wt.spec})
		w.pending = append(w.pending, chunks(id, wt.prompt, w.s.chunk)...)
	}
}

// onToken takes a token the last rank sampled, with its logprob records:
// it ends the sequence or queues the token's decode step. Tokens of
// sequences that ended meanwhile (cancelled while their step was in
// flight) are dropped.
func (w *worker) onToken(seq uint64, pos int, tok int32, records []sample.Logprob) error {
	if b, ok := w.flight[seq]; ok {
		delete(w.flight, seq)
		if w.batchLeft[b]--; w.batchLeft[b] == 0 {
			delete(w.batchLeft, b)
		}
	}
	hs := w.live[seq]
	if hs == nil {
		return nil
	}
	if want := hs.promptLen + hs.generated; pos != want {
		return protoErr("token of sequence %d for position %d, expected %d", seq, pos, want)
	}
	if len(records) != hs.records {
		return protoErr("token of sequence %d with %d logprob records, expected %d", seq, len(records), hs.records)
	}
	for _, r := range records {
		if int(r.ID) >= w.s.nVocab {
			return protoErr("logprob record of sequence %d for token %d, outside the vocabulary of %d", seq, r.ID, w.s.nVocab)
		}
	}
	eog := w.s.cfg.Head.EndOfGeneration != nil && w.s.cfg.Head.EndOfGeneration(tok)
	switch judge(tok, w.s.nVocab, eog, hs.generated, hs.budget) {
	case endNoToken:
		w.finish(seq, "", ErrNoToken)
	case endConstraint:
		w.finish(seq, "", ErrConstraint)
	case endStop:
		w.finish(seq, FinishStop, nil)
	case endLength:
		hs.generated++
		hs.q.push(delivered(tok, records))
		w.finish(seq, FinishLength, nil)
	case feed:
		hs.generated++
		hs.q.push(delivered(tok, records))
		w.pending = append(w.pending, item{kind: KindDecode, seq: seq, pos: pos, rows: 1, tokens: []int32{tok}})
	}
	return nil
}

// delivered is a sampled token as its Sequence reports it: the records'
// padding dropped.
func delivered(tok int32, records []sample.Logprob) Token {
	t := Token{ID: tok}
	if len(records) == 0 {
		return t
	}
	t.Logprob = records[0].Logprob
	for _, r := range records[1:] {
		if r.ID < 0 {
			break
		}
		t.Top = append(t.Top, r)
	}
	return t
}

// verdict is what rank 0 does with a sampled token.
type verdict uint8

const (
	feed          verdict = iota + 1 // deliver it and feed it back as the next step
	endLength                        // deliver it; the budget is spent
	endStop                          // an end of generation: not delivered
	endNoToken                       // nothing could be sampled
	endConstraint                    // the constraint failed on the last rank
)

// judge decides a sampled token's fate: what the last rank could not
// sample ends the sequence with an error; the rest is sequence.Judge's, as
// on a model held whole (engine.Model.Generate). generated counts the
// tokens delivered before this one.
func judge(tok int32, nVocab int, eog bool, generated, budget int) verdict {
	switch {
	case tok == tokenConstraintFailed:
		return endConstraint
	case tok < 0 || int(tok) >= nVocab:
		return endNoToken
	}
	switch sequence.Judge(eog, generated, budget) {
	case sequence.EndOfGeneration:
		return endStop
	case sequence.Last:
		return endLength
	}
	return feed
}

// finish ends a live sequence: its pending work is dropped, a release
// follows whatever of it is in flight, and its slot goes to the next.
func (w *worker) finish(seq uint64, f Finish, err error) {
	hs := w.live[seq]
	delete(w.live, seq)
	w.pending = dropSeq(w.pending, seq)
	w.pending = append(w.pending, item{kind: KindRelease, seq: seq})
	if hs.q.timings != nil {
		w.reports[seq] = hs.q
	}
	hs.q.end(f, err)
	w.admit()
}

// onReport delivers a traced sequence's timings, back from the last rank.
func (w *worker) onReport(seq uint64, timings []sequence.RankTiming) error {
	q := w.reports[seq]
	if q == nil {
		return protoErr("report of sequence %d, which awaits none", seq)
	}
	delete(w.reports, seq)
	slices.SortFunc(timings, func(a, b sequence.RankTiming) int { return a.Rank - b.Rank })
	q.timings <- timings // buffered, sent once
	return nil
}

func (w *worker) cancel(seq uint64) {
	for i, wt := range w.queue {
		if wt.q.id == seq {
			w.queue = slices.Delete(w.queue, i, i+1)
			wt.q.end("", ErrCancelled)
			return
		}
	}
	if w.live[seq] != nil {
		w.finish(seq, "", ErrCancelled)
	}
}

// endAll ends every sequence rank 0 still holds with err; the stage has
// stopped.
func (w *worker) endAll(err error) {
	for _, wt := range w.queue {
		wt.q.end("", err)
	}
	for _, hs := range w.live {
		hs.q.end("", err)
	}
	w.queue, w.live = nil, nil
}
