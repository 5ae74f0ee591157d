package runner

import (
	"context"
	"errors"
	"time"

	"github.com/skulk/skulk/internal/engine/model"
)

// Defaults of continuous batching.
const (
	// stepGather bounds how long a step waits for the running sequences'
	// next tokens once some work is ready: a few sampling and detokenizing
	// turns, far less than a step of any model worth batching.
	stepGather = 2 * time.Millisecond
	// DefaultPrefillChunk is the most prompt tokens of one sequence a step
	// reads: large enough that a chunk reads the weights for many positions
	// at once. Beside running streams the pacer reads fewer, as many as
	// keep their steps short.
	DefaultPrefillChunk = 256
	// DefaultStepBudget is the most rows (decode steps plus prompt tokens)
	// one step computes: one ubatch of the engine.
	DefaultStepBudget = 512
	// AutoPrefixCache (the flag's default) bounds a runner's prefix cache
	// by the KV memory placement admitted for its window, as much again as
	// one full window's cache.
	AutoPrefixCache = -1
)

// errBatcherStopped answers work asked of a batcher whose model is closing.
var errBatcherStopped = errors.New("runner: the model is closing")

// batchConfig tunes a batcher.
type batchConfig struct {
	gather      time.Duration
	budget      int        // rows per step
	chunk       int        // prompt tokens of one sequence per step; ≤ 0: whole prompts, alone
	prefixBytes int64      // the prefix cache's bound; 0 keeps nothing
	meter       *stepMeter // counts steps for the heartbeat; nil counts nothing
}

// batcher is continuous batching over one model: every task's sequence
// lives here from its prompt to its end, and each step of the model
// computes the next rows of several of them together (model.StepRows),
// which reads the weights once for all: the running sequences' decode
// steps and chunks of newly arrived prompts, as planStep picks them. A
// new request joins at the next step. Every sequence gets bit for bit the
// logits it gets alone, so the company a step keeps changes its speed,
// never its results.
//
// The batcher also keeps the prefix cache: a finished sequence's cache
// goes to the prefixStore, and a new prompt copies the longest prefix it
// shares with a stored or running sequence and reads only the rest.
//
// One goroutine (run) owns the live sequences, their caches and the
// prefix store; tasks reach it through msgs and get answers on their
// sequence's buffered reply channel.
type batcher struct {
	shard *model.Shard
	cfg   batchConfig
	msgs  chan batchMsg
	stop  context.CancelFunc
	done  chan struct{}
	// onStep, when set (tests, benchmarks), is called by run with what
	// each live sequence asked of a step and the rows it got.
	onStep func(wants []want, rows []int)
	// store is the prefix cache, run's alone (tests read it after close).
	store prefixStore
	// pace sizes prompt chunks beside running streams, run's alone.
	pace pacer
}

type batchKind uint8

const (
	batchOpen  batchKind = iota // a task's prompt arrives
	batchStep                   // a task's next token is ready
	batchClose                  // a task is done with its sequence
)

type batchMsg struct {
	kind batchKind
	seq  *batchSeq
	tok  int32 // batchStep
}

// batchSeq is one task's sequence. The batcher's goroutine owns every
// field but reply; the task holds the pointer as a handle and reads
// logits only between its answered requests.
type batchSeq struct {
	prompt   []int32
	capacity int
	cache    *model.Cache
	tokens   []int32 // the tokens cache holds, in order
	read     int     // prompt tokens in the cache
	reused   int     // of which copied from the prefix cache
	decode   bool    // a decode step of tok is asked for
	tok      int32
	logits   []float32
	reply    chan error // buffered: the batcher never waits on a task
	// admitted receives reused once the batcher took the sequence in
	// (buffered, sent once).
	admitted chan int
	closed   bool
}

func newBatcher(shard *model.Shard, cfg batchConfig, onStep func([]want, []int)) *batcher {
	ctx, cancel := context.WithCancel(context.Background())
	b := &batcher{shard: shard, cfg: cfg, msgs: make(chan batchMsg), stop: cancel, done: make(chan struct{}), onStep: onStep,
		store: prefixStore{limit: cfg.prefixBytes}}
	go b.run(ctx)
	return b
}

// close stops the batcher and waits for it; requests still pending are
// answered with errBatcherStopped.
func (b *batcher) close() {
	b.stop()
	<-b.done
}

func (b *batcher) send(m batchMsg) bool {
	select {
	case b.msgs <- m:
		return true
	case <-b.done:
		return false
	}
}

// await waits for the answer to a request of seq.
func (b *batcher) await(ctx context.Context, seq *batchSeq) error {
	select {
	case err := <-seq.reply:
		return err
	case <-b.done:
		return errBatcherStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prefill opens a sequence of at most capacity positions and reads prompt
// into it, in chunks between other sequences' steps. It returns the
// sequence and the logits after the prompt (valid until the sequence's
// next step) and how many prompt tokens came from the prefix cache.
// admitted, when set, is called on the caller's goroutine once the
// batcher took the sequence in, before it reads the prompt, with how many
// prompt tokens the prefix cache holds. The sequence must be ended with
// finish, whatever the error.
func (b *batcher) prefill(ctx context.Context, prompt []int32, capacity int, admitted func(reused int)) (*batchSeq, error) {
	seq := &batchSeq{prompt: prompt, capacity: capacity, reply: make(chan error, 1), admitted: make(chan int, 1),
		logits: make([]float32, b.shard.Config.NVocab)}
	if !b.send(batchMsg{kind: batchOpen, seq: seq}) {
		return seq, errBatcherStopped
	}
	if admitted != nil {
		select {
		case n := <-seq.admitted:
			admitted(n)
		case err := <-seq.reply: // answered at once: both may be there
			select {
			case n := <-seq.admitted:
				admitted(n)
			default:
			}
			return seq, err
		case <-b.done:
			return seq, errBatcherStopped
		case <-ctx.Done():
			return seq, ctx.Err()
		}
	}
	return seq, b.await(ctx, seq)
}

// step appends tok to seq and returns the logits after it, valid until
// the next step.
func (b *batcher) step(ctx context.Context, seq *batchSeq, tok int32) ([]float32, error) {
	if !b.send(batchMsg{kind: batchStep, seq: seq, tok: tok}) {
		return nil, errBatcherStopped
	}
	if err := b.await(ctx, seq); err != nil {
		return nil, err
	}
	return seq.logits, nil
}

// finish ends seq; its cache goes to the prefix cache.
func (b *batcher) finish(seq *batchSeq) {
	b.send(batchMsg{kind: batchClose, seq: seq})
}

func (b *batcher) run(ctx context.Context) {
	defer close(b.done)
	var (
		live   []*batchSeq
		st     model.Steps
		gather = time.NewTimer(b.cfg.gather)
		armed  bool // gather runs: work is waiting for company
		fired  bool // it ran out: step with the company there is
		wants  []want
		took   time.Duration // the last step's time
	)
	gather.Stop()
	for {
		wants = wants[:0]
		working, waiting, decoding := 0, 0, 0
		for _, s := range live {
			w := want{decode: s.decode, left: len(s.prompt) - s.read}
			wants = append(wants, w)
			switch {
			case w.decode:
				working++
				decoding++
			case w.left > 0:
				working++
			default:
				waiting++ // decoding, its task sampling the next token
			}
		}
		if working == 0 || (waiting > 0 && !fired) {
			if working > 0 && !armed {
				// A sequence that misses a step waits a whole step for
				// the next: on a slow or busy machine the wait for its
				// company grows with the steps.
				gather.Reset(max(b.cfg.gather, took/8))
				armed = true
			}
			var deadline <-chan time.Time
			if armed {
				deadline = gather.C
			}
			select {
			case <-ctx.Done():
				for _, s := range live {
					if s.decode || s.read < len(s.prompt) {
						s.reply <- errBatcherStopped
					}
				}
				return
			case m := <-b.msgs:
				live = b.handle(m, live, &b.store)
			case <-deadline:
				armed, fired = false, true
			}
			continue
		}
		// Stop leaves no stale tick to receive (Go 1.23 timers).
		gather.Stop()
		armed, fired = false, false
		// A sequence that has read its prompt is a running stream: a
		// step that reads prompt rows delays its next token.
		t0 := time.Now()
		b.stepOnce(&st, live, wants, b.pace.limit(decoding+waiting, decoding, b.cfg.chunk))
		took = time.Since(t0)
	}
}

// handle applies a task's message and returns the live sequences.
func (b *batcher) handle(m batchMsg, live []*batchSeq, store *prefixStore) []*batchSeq {
	s := m.seq
	switch m.kind {
	case batchOpen:
		s.cache = b.shard.NewCache(s.capacity)
		b.reuse(s, live, store)
		s.admitted <- s.reused
		s.tokens = append(s.tokens, s.prompt[:s.read]...)
		return append(live, s)
	case batchStep:
		s.decode, s.tok = true, m.tok
	case batchClose:
		for i, l := range live {
			if l == s {
				live = append(live[:i], live[i+1:]...)
				break
			}
		}
		if s.cache != nil && len(s.tokens) > 0 && s.cache.Len() == len(s.tokens) {
			store.add(s.tokens, s.cache)
		}
		s.cache, s.closed = nil, true
	}
	return live
}

// reuse copies into s's cache the longest prefix of its prompt that a
// stored or running sequence holds, leaving at least one prompt token to
// read (its logits are the first token's).
func (b *batcher) reuse(s *batchSeq, live []*batchSeq, store *prefixStore) {
	limit := len(s.prompt) - 1
	e, n := store.match(s.prompt[:limit])
	src := (*model.Cache)(nil)
	if e != nil {
		src = e.cache
	}
	for _, l := range live {
		if k := commonPrefix(l.tokens, s.prompt[:limit]); k > n && l.cache != nil {
			src, n = l.cache, k
		}
	}
	if n == 0 || src == nil {
		return
	}
	if err := s.cache.CopyPrefix(src, n); err != nil {
		return // the prompt is read whole instead
	}
	s.read, s.reused = n, n
}

// stepOnce runs the step planStep picks for live, reading at most prompt
// prompt rows, and answers the sequences whose request it completes.
func (b *batcher) stepOnce(st *model.Steps, live []*batchSeq, wants []want, prompt int) {
	rows := planStep(wants, b.cfg.budget, b.cfg.chunk, prompt)
	if b.onStep != nil {
		b.onStep(wants, rows)
	}
	b.cfg.meter.begin()
	defer b.cfg.meter.end()
	var (
		caches         []*model.Cache
		counts         []int
		toks           []int32
		who            []*batchSeq
		decoded, aread int
	)
	for i, s := range live {
		switch {
		case rows[i] == 0:
			continue
		case wants[i].decode:
			toks = append(toks, s.tok)
			decoded++
		default:
			toks = append(toks, s.prompt[s.read:s.read+rows[i]]...)
			aread += rows[i]
		}
		caches, counts, who = append(caches, s.cache), append(counts, rows[i]), append(who, s)
	}
	if len(who) == 0 {
		return
	}
	nv := b.shard.Config.NVocab
	var (
		res model.Result
		err error
	)
	t0 := time.Now()
	if b.cfg.chunk <= 0 && len(who) == 1 && !who[0].decode {
		// A whole prompt, alone: Forward splits one longer than a pass.
		res, err = b.shard.Forward(caches[0], model.Batch{Tokens: toks})
	} else {
		res, err = b.shard.StepRows(st, caches, counts, model.Batch{Tokens: toks})
	}
	if err == nil {
		b.pace.observe(decoded, aread, time.Since(t0))
	}
	if err != nil && len(who) > 1 {
		// Refused as a whole (a full cache, say): each alone, so that
		// only the sequence at fault fails.
		off := 0
		for k, s := range who {
			r, err := b.shard.StepRows(st, caches[k:k+1], counts[k:k+1], model.Batch{Tokens: toks[off : off+counts[k]]})
			off += counts[k]
			b.advance(s, counts[k], r.Logits, err)
		}
		return
	}
	for k, s := range who {
		var logits []float32
		if err == nil {
			logits = res.Logits[k*nv : (k+1)*nv]
		}
		b.advance(s, counts[k], logits, err)
	}
}

// advance records that s took n rows (logits after them, or err) and
// answers its task when its request is done.
func (b *batcher) advance(s *batchSeq, n int, logits []float32, err error) {
	if err != nil {
		s.decode = false
		s.read = len(s.prompt) // a failed prompt is not read on
		s.reply <- err
		return
	}
	if s.decode {
		s.tokens = append(s.tokens, s.tok)
		s.decode = false
	} else {
		s.tokens = append(s.tokens, s.prompt[s.read:s.read+n]...)
		s.read += n
		if s.read < len(s.prompt) {
			return
		}
	}
	copy(s.logits, logits)
	s.reply <- nil
}
