package pipeline

import (
	"errors"
	"slices"
	"time"

	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/sequence"
)

// worker is a stage's mutable state, owned by the goroutine in Stage.Run.
type worker struct {
	s          *Stage
	seqs       map[uint64]*seqState // the sequences this rank holds a cache for
	pending    []item
	outq       [][]byte // encoded objects waiting for the sender, in order
	lastDecode bool     // the last computed batch was a decode step
	received   uint64   // objects received: the group of the next one's items

	counts StageStats // the work counters

	// Scratch of decode steps, reused.
	steps  model.Steps
	caches []*model.Cache
	toks   []int32
	rows   []float32

	// Rank 0 only.
	queue []*waiting          // submitted, waiting for a slot, in order
	live  map[uint64]*headSeq // admitted and not finished
	// reports are the traced sequences that ended and await their
	// timings from the last rank.
	reports map[uint64]*Sequence
	// The decode micro-batches sent and not all back: the batch each
	// sequence's step went in, and how many tokens each still waits for.
	flight    map[uint64]uint64
	batchLeft map[uint64]int
	batches   uint64 // micro-batches sent so far: the next one's number
}

// seqState is one sequence at one rank.
type seqState struct {
	cache   *model.Cache
	spec    Spec
	sampler *sample.Sampler // the last rank's
	history []int32         // the tokens sampled so far (the last rank's)
	// The last rank's constraint, when the spec has one; conErr is why it
	// could not be built or refused a token: the sequence then gets
	// tokenConstraintFailed.
	constraint Constraint
	conErr     error
	// timing is this rank's part of a traced sequence (Spec.Trace); nil
	// otherwise.
	timing *sequence.RankTiming
}

// waiting is a submitted sequence that has no slot yet.
type waiting struct {
	q      *Sequence
	prompt []int32
	spec   Spec
}

// headSeq is an admitted sequence as rank 0 sees it.
type headSeq struct {
	q         *Sequence
	promptLen int
	budget    int // tokens to generate at most
	generated int
	records   int // logprob records each token carries
}

func newWorker(s *Stage) *worker {
	w := &worker{s: s, seqs: make(map[uint64]*seqState)}
	if s.first {
		w.live = make(map[uint64]*headSeq)
		w.reports = make(map[uint64]*Sequence)
		w.flight, w.batchLeft = make(map[uint64]uint64), make(map[uint64]int)
	}
	return w
}

// accepting reports whether the stage takes in more objects now. Rank 0
// always does: what reaches it is the tokens of at most a few steps per
// sequence.
func (w *worker) accepting() bool {
	return w.s.first || len(w.pending) < max(2*w.s.maxBatch, 16)
}

// next plans the next batch.
func (w *worker) next() batch {
	decodeCap, decodeMin := w.s.maxBatch, 1
	if w.s.first {
		decodeCap = headDecodeCap(len(w.live), w.s.cfg.Ranks, w.s.maxBatch)
		decodeMin = headDecodeMin(len(w.batchLeft), w.s.cfg.Ranks, decodeCap)
	}
	return plan(w.pending, w.lastDecode, decodeCap, decodeMin)
}

func (w *worker) fault(op string, err error) error {
	return &FaultError{Rank: w.s.cfg.Rank, Op: op, Err: err}
}

// receive takes in one object from the In link.
func (w *worker) receive(m inMsg) error {
	if m.err != nil {
		return w.fault("receive", m.err)
	}
	o := m.obj
	if w.s.first {
		if o.kind == KindReport {
			if err := w.onReport(o.entries[0].seq, o.timings); err != nil {
				return w.fault("receive", err)
			}
			return nil
		}
		if o.kind != KindToken {
			return w.fault("receive", protoErr("rank 0 received a %s object", o.kind))
		}
		for i, e := range o.entries {
			if err := w.onToken(e.seq, e.pos, o.tokens[i], o.records[i*o.width:(i+1)*o.width]); err != nil {
				return w.fault("receive", err)
			}
		}
		return nil
	}
	switch {
	case o.kind == KindToken || o.kind == KindReport:
		return w.fault("receive", protoErr("rank %d received a %s object", w.s.cfg.Rank, o.kind))
	case o.width != 0 && o.width != w.s.width:
		return w.fault("receive", protoErr("%s object of %d-wide rows, the model's are %d", o.kind, o.width, w.s.width))
	}
	row := 0
	w.received++
	for _, e := range o.entries {
		it := item{kind: o.kind, seq: e.seq, pos: e.pos, rows: e.rows, spec: o.spec, group: w.received, timings: o.timings}
		if o.width != 0 {
			it.hidden = o.hidden[row*o.width : (row+e.rows)*o.width]
			row += e.rows
		}
		w.pending = append(w.pending, it)
	}
	return nil
}

// execute runs one planned batch and queues what it sends on.
func (w *worker) execute(b batch) error {
	items := make([]item, len(b.idx))
	for i, k := range b.idx {
		items[i] = w.pending[k]
	}
	w.pending = without(w.pending, b.idx)
	if b.kind == KindPrefill || b.kind == KindDecode {
		start := time.Now()
		defer func() {
			end := time.Now()
			w.counts.Busy += end.Sub(start)
			for _, it := range items {
				if ss := w.seqs[it.seq]; ss != nil && ss.timing != nil {
					if b.kind == KindPrefill {
						ss.timing.PrefillRows += it.rows
						ss.timing.PrefillBusy += end.Sub(start)
					} else {
						ss.timing.DecodeSteps++
						ss.timing.DecodeBusy += end.Sub(start)
					}
				}
			}
			if w.s.cfg.Trace != nil {
				seqs := make([]uint64, len(items))
				for i, it := range items {
					seqs[i] = it.seq
				}
				w.s.cfg.Trace(StepTrace{Rank: w.s.cfg.Rank, Kind: b.kind, Seqs: seqs, Start: start, End: end})
			}
		}()
	}
	var err error
	switch b.kind {
	case KindOpen:
		err = w.open(items[0])
	case KindRelease:
		w.release(items[0])
	case KindPrefill:
		w.lastDecode = false
		w.counts.PrefillChunks++
		err = w.prefill(items[0])
	case KindDecode:
		w.lastDecode = true
		w.counts.DecodeSteps++
		w.counts.DecodeRows += len(items)
		if w.s.first {
			w.batches++
			for _, it := range items {
				w.flight[it.seq] = w.batches
			}
			w.batchLeft[w.batches] = len(items)
		}
		err = w.decode(items)
	}
	return err
}

// forward queues an object for the next rank (from the last rank: tokens
// and reports for rank 0).
func (w *worker) forward(b []byte) { w.outq = append(w.outq, b) }

func (w *worker) open(it item) error {
	if _, dup := w.seqs[it.seq]; dup {
		return w.fault("receive", protoErr("open of sequence %d, which is open", it.seq))
	}
	ss := &seqState{cache: w.s.cfg.Shard.NewCache(it.spec.Capacity), spec: it.spec}
	if it.spec.Trace {
		ss.timing = &sequence.RankTiming{Rank: w.s.cfg.Rank, Opened: time.Now()}
	}
	if w.s.last {
		ss.sampler = sample.New(it.spec.Sample, w.s.nVocab)
		if len(it.spec.Constraint) > 0 {
			w.constrain(it.seq, ss)
		}
	}
	w.seqs[it.seq] = ss
	if !w.s.last {
		w.forward(encodeObject(&object{kind: KindOpen, entries: []entry{{seq: it.seq}}, spec: ss.spec}))
	}
	ss.spec.Constraint = nil // used: a rank need not hold up to MaxConstraintBytes per sequence
	return nil
}

// constrain builds a sequence's constraint on the last rank. A failure
// is the sequence's, not the stage's: its first token reports it.
func (w *worker) constrain(seq uint64, ss *seqState) {
	if w.s.cfg.Constrain == nil {
		ss.conErr = errors.New("the stage takes no constraints")
	} else if c, err := w.s.cfg.Constrain(ss.spec.Constraint); err != nil {
		ss.conErr = err
	} else {
		ss.constraint = c
		ss.sampler.SetConstraint(c)
		return
	}
	w.s.log.Warn("pipeline: a sequence's constraint is refused", "seq", seq, "err", ss.conErr)
}

// release frees a sequence's cache. A sequence this rank never opened was
// never opened downstream either (links keep order), so its release stops
// here. A traced sequence's release gathers each rank's timing; the last
// rank sends them all back to rank 0 as its report.
func (w *worker) release(it item) {
	ss, ok := w.seqs[it.seq]
	if !ok {
		return
	}
	delete(w.seqs, it.seq)
	timings := it.timings
	if ss.timing != nil {
		ss.timing.Released = time.Now()
		timings = append(slices.Clip(timings), *ss.timing)
	}
	switch {
	case !w.s.last:
		w.forward(encodeObject(&object{kind: KindRelease, entries: []entry{{seq: it.seq}}, timings: timings}))
	case ss.timing == nil:
	case w.s.first: // one rank: its own report
		w.onReport(it.seq, timings)
	default:
		w.forward(encodeObject(&object{kind: KindReport, entries: []entry{{seq: it.seq}}, timings: timings}))
	}
}

// state returns the open sequence an item is for, at the position it
// expects.
func (w *worker) state(it item) (*seqState, error) {
	ss := w.seqs[it.seq]
	switch {
	case ss == nil:
		return nil, w.fault("receive", protoErr("%s of sequence %d, which is not open", it.kind, it.seq))
	case ss.cache.Len() != it.pos:
		return nil, w.fault("receive", protoErr("%s of sequence %d at position %d, its cache holds %d", it.kind, it.seq, it.pos, ss.cache.Len()))
	}
	return ss, nil
}

func (w *worker) prefill(it item) error {
	ss, err := w.state(it)
	if err != nil {
		return err
	}
	in := model.Batch{Tokens: it.tokens, Hidden: it.hidden}
	res, err := w.s.cfg.Shard.Forward(ss.cache, in)
	if err != nil {
		return w.fault("step", err)
	}
	e := entry{seq: it.seq, pos: it.pos, rows: it.rows}
	if !w.s.last {
		w.forward(encodeObject(&object{kind: KindPrefill, entries: []entry{e}, width: w.s.width, hidden: res.Hidden}))
		return nil
	}
	if end := it.pos + it.rows; end == ss.spec.PromptLen {
		w.emit([]sampled{w.sample(entry{seq: it.seq, pos: end, rows: 1}, ss, res.Logits)})
	}
	return nil
}

func (w *worker) decode(items []item) error {
	w.caches, w.toks, w.rows = w.caches[:0], w.toks[:0], w.rows[:0]
	entries := make([]entry, len(items))
	states := make([]*seqState, len(items))
	for i, it := range items {
		ss, err := w.state(it)
		if err != nil {
			return err
		}
		states[i] = ss
		entries[i] = entry{seq: it.seq, pos: it.pos, rows: 1}
		w.caches = append(w.caches, ss.cache)
		w.toks = append(w.toks, it.tokens...)
		w.rows = append(w.rows, it.hidden...)
	}
	in := model.Batch{Tokens: w.toks, Hidden: w.rows}
	if w.s.first {
		in.Hidden = nil
	} else {
		in.Tokens = nil
	}
	res, err := w.s.cfg.Shard.Step(&w.steps, w.caches, in)
	clear(w.caches)
	if err != nil {
		return w.fault("step", err)
	}
	if !w.s.last {
		w.forward(encodeObject(&object{kind: KindDecode, entries: entries, width: w.s.width, hidden: res.Hidden}))
		return nil
	}
	out := make([]sampled, len(items))
	nv := w.s.nVocab
	for i, ss := range states {
		e := entries[i]
		e.pos++
		out[i] = w.sample(e, ss, res.Logits[i*nv:(i+1)*nv])
	}
	w.emit(out)
	return nil
}

// sampled is a token the last rank drew for rank 0: its entry, and the
// logprob records the sequence asked for.
type sampled struct {
	e       entry
	tok     int32
	records []sample.Logprob
}

// sample draws a sequence's next token from its logits as
// engine.Model.Generate does: masked by the constraint, which is then
// advanced by the token; the logprobs are of the raw logits.
func (w *worker) sample(e entry, ss *seqState, logits []float32) sampled {
	t := tokenConstraintFailed
	if ss.conErr == nil {
		t = ss.sampler.Sample(logits, ss.history)
		if t != sample.NoToken && ss.constraint != nil {
			if err := ss.constraint.Accept(t); err != nil {
				ss.conErr = err
				w.s.log.Warn("pipeline: a sequence's constraint refused the token drawn", "seq", e.seq, "token", t, "err", err)
				t = tokenConstraintFailed
			}
		}
		ss.history = append(ss.history, t)
	}
	return sampled{e: e, tok: t, records: logprobRecords(logits, t, ss.spec.records())}
}

// logprobRecords returns n records of token t (none when n is 0): its own
// log-probability, then its n-1 most likely alternatives, padded with
// {-1, 0} when fewer logits are finite. A token that is not a vocabulary
// id gets only padding.
func logprobRecords(logits []float32, t int32, n int) []sample.Logprob {
	if n == 0 {
		return nil
	}
	recs := make([]sample.Logprob, 1, n)
	recs[0].ID = t
	if t >= 0 {
		recs[0].Logprob = sample.LogprobOf(logits, t)
		recs = sample.TopLogprobs(logits, n-1, recs)
	}
	for len(recs) < n {
		recs = append(recs, sample.Logprob{ID: -1})
	}
	return recs
}

// emit hands sampled tokens to rank 0: over the Out link, as one token
// object per number of logprob records (an object's entries all carry the
// same), or directly in a pipeline of one stage.
func (w *worker) emit(out []sampled) {
	if w.s.first {
		for _, o := range out {
			// Rank 0 produced these itself: they cannot be out of order.
			_ = w.onToken(o.e.seq, o.e.pos, o.tok, o.records)
		}
		return
	}
	sent := make([]bool, len(out))
	for i := range out {
		if sent[i] {
			continue
		}
		obj := object{kind: KindToken, width: len(out[i].records)}
		for j := i; j < len(out); j++ {
			if !sent[j] && len(out[j].records) == obj.width {
				sent[j] = true
				obj.entries = append(obj.entries, out[j].e)
				obj.tokens = append(obj.tokens, out[j].tok)
				obj.records = append(obj.records, out[j].records...)
			}
		}
		w.forward(encodeObject(&obj))
	}
}

func (w *worker) stats() StageStats {
	st := w.counts
	st.Rank, st.Sequences, st.Pending, st.Live, st.Queued = w.s.cfg.Rank, len(w.seqs), len(w.pending), len(w.live), len(w.queue)
	st.InFlight = len(w.batchLeft)
	for _, ss := range w.seqs {
		st.Positions += ss.cache.Len()
	}
	return st
}
