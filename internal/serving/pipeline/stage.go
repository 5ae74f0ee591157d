package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sequence"
)

// Defaults of StageConfig and HeadConfig.
const (
	DefaultSlots     = 8   // sequences admitted at once
	DefaultChunkSize = 256 // prompt tokens per prefill chunk
	DefaultMaxBatch  = 64  // decode steps in one model step
	// maxStep is the most sequences model.Shard.Step takes.
	maxStep = 512
	// inBuffer is how many received objects wait between a stage's
	// receiving goroutine and its owner.
	inBuffer = 4
)

// StageConfig configures one rank of a pipeline.
type StageConfig struct {
	// Shard holds the rank's blocks. Range.First makes the stage rank 0,
	// the head that takes sequences; Range.Last makes it the rank that
	// samples. The stage does not close it.
	Shard *model.Shard
	// Rank and Ranks place the stage: rank Rank of Ranks stages.
	Rank, Ranks int
	// In carries objects from the previous rank (rank 0: the tokens the
	// last rank sampled), Out to the next rank (the last rank: tokens to
	// rank 0). Both are nil in a pipeline of one stage. The stage closes
	// them when it stops.
	In, Out Link
	// MaxBatch bounds how many sequences' decode steps run as one model
	// step; 0 means DefaultMaxBatch.
	MaxBatch int
	// Head configures rank 0; other ranks ignore it.
	Head HeadConfig
	// Constrain builds, on the last rank, the constraint of a sequence
	// whose Spec.Constraint is set, from that source. It runs on the
	// stage's goroutine, so it should be quick (a JSON schema compiles in
	// well under a step's time). nil, or an error, ends such a sequence
	// with ErrConstraint. Other ranks ignore it.
	Constrain func(src []byte) (Constraint, error)
	// Logger receives faults; nil discards them.
	Logger *slog.Logger
	// Trace, when set, is called on the stage's goroutine after each
	// prefill chunk or decode step it computed; it must return quickly.
	Trace func(StepTrace)
}

// StepTrace is one prefill chunk or decode step a stage computed: which
// sequences, and when. Benchmarks and tests read the stages' overlap from
// it.
type StepTrace struct {
	Rank       int
	Kind       Kind // KindPrefill or KindDecode
	Seqs       []uint64
	Start, End time.Time
}

// Constraint restricts a sequence's tokens on the last rank (a grammar,
// for structured output): Mask forbids, before each draw, the tokens that
// may not come next; Accept advances it by the token drawn, end of
// generation included, as engine.Model.Generate does.
type Constraint = sequence.Constraint

// HeadConfig configures rank 0, which owns the sequences.
type HeadConfig struct {
	// Slots bounds the sequences admitted at once (and so the caches
	// every rank holds); later ones wait in order. 0 means DefaultSlots.
	Slots int
	// ChunkSize is the prompt tokens of one prefill object; 0 means
	// DefaultChunkSize.
	ChunkSize int
	// Context caps prompt plus generated tokens when a Request does not;
	// 0 means the model's trained context length.
	Context int
	// EndOfGeneration reports the tokens that end a sequence (they are not
	// delivered); nil means none do.
	EndOfGeneration func(id int32) bool
}

// Stage runs one rank of a pipeline: its shard's blocks over the objects
// its In link brings, its results on its Out link. Run drives it; Submit,
// Stats and a Sequence's Cancel reach its goroutine while Run runs.
type Stage struct {
	// Immutable after NewStage.
	cfg         StageConfig
	first, last bool
	width       int // hidden row width (NEmbd)
	nVocab      int
	maxBatch    int
	slots       int
	chunk       int
	log         *slog.Logger

	reqs    chan func(*worker) // owner requests, run on Run's goroutine
	done    chan struct{}      // closed when Run has returned
	kick    chan struct{}      // capacity 1: cancelled has ids
	started atomic.Bool
	nextID  atomic.Uint64 // the last sequence id handed out
	err     error         // why Run stopped; written before done closes

	cancelMu  sync.Mutex
	cancelled []uint64 // guarded by cancelMu: sequences to cancel, for Run's goroutine
}

// NewStage checks cfg and returns a stage ready to Run.
func NewStage(cfg StageConfig) (*Stage, error) {
	if cfg.Shard == nil {
		return nil, errors.New("pipeline: stage without a shard")
	}
	r := cfg.Shard.Range
	switch {
	case cfg.Ranks < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Ranks:
		return nil, fmt.Errorf("pipeline: rank %d of %d stages", cfg.Rank, cfg.Ranks)
	case r.First != (cfg.Rank == 0) || r.Last != (cfg.Rank == cfg.Ranks-1):
		return nil, fmt.Errorf("pipeline: rank %d of %d holds blocks [%d, %d) first=%v last=%v", cfg.Rank, cfg.Ranks, r.Start, r.End, r.First, r.Last)
	case (cfg.In == nil) != (cfg.Ranks == 1) || (cfg.Out == nil) != (cfg.Ranks == 1):
		return nil, fmt.Errorf("pipeline: a stage of %d needs in and out links exactly when there are several", cfg.Ranks)
	case cfg.MaxBatch < 0 || cfg.MaxBatch > maxStep:
		return nil, fmt.Errorf("pipeline: MaxBatch %d is not within [0, %d]", cfg.MaxBatch, maxStep)
	case cfg.Head.Slots < 0 || cfg.Head.ChunkSize < 0 || cfg.Head.Context < 0:
		return nil, fmt.Errorf("pipeline: negative head setting %+v", cfg.Head)
	}
	s := &Stage{
		cfg:      cfg,
		first:    r.First,
		last:     r.Last,
		width:    cfg.Shard.Config.NEmbd,
		nVocab:   cfg.Shard.Config.NVocab,
		maxBatch: cmpOr(cfg.MaxBatch, DefaultMaxBatch),
		slots:    cmpOr(cfg.Head.Slots, DefaultSlots),
		chunk:    cmpOr(cfg.Head.ChunkSize, DefaultChunkSize),
		log:      cfg.Logger,
		reqs:     make(chan func(*worker)),
		done:     make(chan struct{}),
		kick:     make(chan struct{}, 1),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// MaxObjectBytes is the largest object a pipeline of this model sends: a
// prefill chunk of chunk rows, a decode step of maxBatch sequences, an
// open with the largest constraint, or maxBatch tokens with the most
// logprob records.
func MaxObjectBytes(cfg model.Config, chunk, maxBatch int) uint64 {
	chunk, maxBatch = cmpOr(chunk, DefaultChunkSize), cmpOr(maxBatch, DefaultMaxBatch)
	d := uint64(cfg.NEmbd)
	prefill := headerLen + entryLen + uint64(chunk)*d*4
	decode := headerLen + uint64(maxBatch)*(entryLen+d*4)
	open := uint64(headerLen + entryLen + specLen + MaxConstraintBytes)
	tokens := headerLen + uint64(maxBatch)*(entryLen+4+recordLen*(1+MaxTopLogprobs))
	return max(prefill, decode, open, tokens)
}

// Done is closed when Run has returned.
func (s *Stage) Done() <-chan struct{} { return s.done }

// Err is why the stage stopped: ErrStopped, or the *FaultError Run
// returned. It is nil before Done is closed.
func (s *Stage) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// inMsg is one received object, or why receiving ended.
type inMsg struct {
	obj object
	err error
}

// Run serves the stage until ctx ends (it returns nil) or the stage faults
// (it returns the *FaultError). Either way it closes both links, so that
// every other rank learns of it, and ends every sequence it still holds.
// Run may be called once.
func (s *Stage) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("pipeline: a stage runs once")
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	inCh := make(chan inMsg, inBuffer)
	sendCh := make(chan []byte)
	sendErr := make(chan error, 1)
	if s.cfg.In != nil {
		wg.Go(func() { s.receive(ctx, inCh) })
	}
	if s.cfg.Out != nil {
		wg.Go(func() { s.send(ctx, sendCh, sendErr) })
	}
	w := newWorker(s)
	err := s.loop(ctx, w, inCh, sendCh, sendErr)
	cancel()
	if s.cfg.In != nil {
		s.cfg.In.Close()
		s.cfg.Out.Close()
	}
	wg.Wait()
	s.err = err
	if err == nil {
		s.err = ErrStopped
	} else {
		s.log.Warn("pipeline stage faulted", "rank", s.cfg.Rank, "err", err)
	}
	w.endAll(s.err)
	close(s.done)
	return err
}

// receive decodes objects off the In link until it fails or ctx ends.
func (s *Stage) receive(ctx context.Context, inCh chan<- inMsg) {
	for {
		b, err := s.cfg.In.Recv(ctx)
		if ctx.Err() != nil {
			return // stopping, not a fault
		}
		var o object
		if err == nil {
			o, err = decodeObject(b)
		}
		select {
		case inCh <- inMsg{obj: o, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// send writes the objects handed to it to the Out link until a Send fails
// or ctx ends.
func (s *Stage) send(ctx context.Context, sendCh <-chan []byte, errc chan<- error) {
	for {
		select {
		case b := <-sendCh:
			if err := s.cfg.Out.Send(ctx, b); err != nil {
				if ctx.Err() == nil {
					errc <- err
				}
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// loop is the stage's owner goroutine: it takes in what arrived, computes
// the next batch when the previous output has been handed to the sender,
// and otherwise waits for anything to happen. Rank 0 always takes in
// returned tokens (there are at most a few per sequence), so the last rank
// never waits on it and the ring of links cannot deadlock; other ranks stop
// taking objects while too many wait, which backpressures their upstream.
func (s *Stage) loop(ctx context.Context, w *worker, inCh <-chan inMsg, sendCh chan<- []byte, sendErr <-chan error) error {
	for {
		if ctx.Err() != nil {
			return nil
		}
		if err := s.absorb(w, inCh); err != nil {
			return err
		}
		if len(w.outq) == 0 {
			if b := w.next(); b.kind != 0 {
				if err := w.execute(b); err != nil {
					return err
				}
				continue
			}
		}
		var (
			out  chan<- []byte
			head []byte
			in   <-chan inMsg
		)
		if len(w.outq) > 0 {
			out, head = sendCh, w.outq[0]
		}
		if w.accepting() {
			in = inCh
		}
		select {
		case out <- head:
			w.outq[0] = nil
			w.outq = w.outq[1:]
			// Let the sender write it before this goroutine starts its
			// next step: with one engine thread and GOMAXPROCS 1 (a
			// process pinned to one core) the step would hold the only P
			// and the object would wait for the runtime to preempt it,
			// ~10 ms on every hop, while the next rank idles.
			runtime.Gosched()
		case m := <-in:
			if err := w.receive(m); err != nil {
				return err
			}
		case f := <-s.reqs:
			f(w)
		case <-s.kick:
			s.takeCancels(w)
		case err := <-sendErr:
			return &FaultError{Rank: s.cfg.Rank, Op: "send", Err: err}
		case <-ctx.Done():
			return nil
		}
	}
}

// absorb takes in every request and object that is already waiting, so
// that a batch includes every step that is ready.
func (s *Stage) absorb(w *worker, inCh <-chan inMsg) error {
	for {
		var in <-chan inMsg
		if w.accepting() {
			in = inCh
		}
		select {
		case f := <-s.reqs:
			f(w)
		case <-s.kick:
			s.takeCancels(w)
		case m := <-in:
			if err := w.receive(m); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// cancel asks Run's goroutine to cancel a sequence, without waiting.
func (s *Stage) cancel(seq uint64) {
	select {
	case <-s.done:
		return // every sequence has ended
	default:
	}
	s.cancelMu.Lock()
	s.cancelled = append(s.cancelled, seq)
	s.cancelMu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// takeCancels cancels the sequences asked for so far.
func (s *Stage) takeCancels(w *worker) {
	s.cancelMu.Lock()
	ids := s.cancelled
	s.cancelled = nil
	s.cancelMu.Unlock()
	for _, id := range ids {
		w.cancel(id)
	}
}

// do runs f on the stage's goroutine and waits for it.
func (s *Stage) do(ctx context.Context, f func(*worker)) error {
	done := make(chan struct{})
	select {
	case s.reqs <- func(w *worker) { f(w); close(done) }:
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return ctx.Err()
	}
	<-done
	return nil
}

// StageStats is a snapshot of a stage.
type StageStats struct {
	Rank      int
	Sequences int // sequences whose KV cache the stage holds
	Positions int // positions held in those caches
	Pending   int // work items waiting to run
	// Work done since the stage started.
	PrefillChunks int // prefill objects computed
	DecodeSteps   int // model steps of decode positions
	DecodeRows    int // sequences those steps carried (DecodeRows/DecodeSteps is the mean batch)
	// Busy is the wall time spent in prefill and decode steps.
	Busy time.Duration
	// Rank 0 only.
	Live   int // sequences admitted and not finished
	Queued int // sequences waiting for a slot
	// InFlight is the decode micro-batches whose tokens have not all come
	// back: rank 0 waits for full micro-batches while it is at least the
	// number of ranks, so one never counted down would slow it for good.
	InFlight int
}

// Stats snapshots the stage; it fails once the stage has stopped.
func (s *Stage) Stats(ctx context.Context) (StageStats, error) {
	var st StageStats
	err := s.do(ctx, func(w *worker) { st = w.stats() })
	return st, err
}
