package pipeline

import (
	"time"

	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sample"
)

// worker is a stage's mutable state, owned by the goroutine in Stage.Run.
type worker struct {
	s          *Stage
	seqs       map[uint64]*seqState // the sequences this rank holds a cache for
	pending    []item
	outq       [][]byte // encoded objects waiting for the sender, in order
	lastDecode bool     // the last computed batch was a decode step

	counts StageStats // the work counters

	// Scratch of decode steps, reused.
	steps  model.Steps
	caches []*model.Cache
	toks   []int32
	rows   []float32

	// Rank 0 only.
	queue []*waiting          // submitted, waiting for a slot, in order
	live  map[uint64]*headSeq // admitted and not finished
}

// seqState is one sequence at one rank.
type seqState struct {
	cache   *model.Cache
	spec    Spec
	sampler *sample.Sampler // the last rank's
	history []int32         // the tokens sampled so far (the last rank's)
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
}

func newWorker(s *Stage) *worker {
	w := &worker{s: s, seqs: make(map[uint64]*seqState)}
	if s.first {
		w.live = make(map[uint64]*headSeq)
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
	decodeCap := w.s.maxBatch
	if w.s.first {
		decodeCap = headDecodeCap(len(w.live), w.s.cfg.Ranks, w.s.maxBatch)
	}
	return plan(w.pending, w.lastDecode, decodeCap)
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
		if o.kind != KindToken {
			return w.fault("receive", protoErr("rank 0 received a %s object", o.kind))
		}
		for i, e := range o.entries {
			if err := w.onToken(e.seq, e.pos, o.tokens[i]); err != nil {
				return w.fault("receive", err)
			}
		}
		return nil
	}
	switch {
	case o.kind == KindToken:
		return w.fault("receive", protoErr("rank %d received a token object", w.s.cfg.Rank))
	case o.width != 0 && o.width != w.s.width:
		return w.fault("receive", protoErr("%s object of %d-wide rows, the model's are %d", o.kind, o.width, w.s.width))
	}
	row := 0
	for _, e := range o.entries {
		it := item{kind: o.kind, seq: e.seq, pos: e.pos, rows: e.rows, spec: o.spec}
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
		defer func() { w.counts.Busy += time.Since(start) }()
	}
	var err error
	switch b.kind {
	case KindOpen:
		err = w.open(items[0])
	case KindRelease:
		w.release(items[0].seq)
	case KindPrefill:
		w.lastDecode = false
		w.counts.PrefillChunks++
		err = w.prefill(items[0])
	case KindDecode:
		w.lastDecode = true
		w.counts.DecodeSteps++
		w.counts.DecodeRows += len(items)
		err = w.decode(items)
	}
	return err
}

// forward queues an object for the next rank (not from the last rank,
// whose Out link carries only tokens).
func (w *worker) forward(b []byte) { w.outq = append(w.outq, b) }

func (w *worker) open(it item) error {
	if _, dup := w.seqs[it.seq]; dup {
		return w.fault("receive", protoErr("open of sequence %d, which is open", it.seq))
	}
	ss := &seqState{cache: w.s.cfg.Shard.NewCache(it.spec.Capacity), spec: it.spec}
	if w.s.last {
		ss.sampler = sample.New(it.spec.Sample, w.s.nVocab)
	}
	w.seqs[it.seq] = ss
	if !w.s.last {
		w.forward(encodeObject(KindOpen, []entry{{seq: it.seq}}, 0, nil, nil, &ss.spec))
	}
	return nil
}

// release frees a sequence's cache. A sequence this rank never opened was
// never opened downstream either (links keep order), so its release stops
// here.
func (w *worker) release(seq uint64) {
	if _, ok := w.seqs[seq]; !ok {
		return
	}
	delete(w.seqs, seq)
	if !w.s.last {
		w.forward(encodeObject(KindRelease, []entry{{seq: seq}}, 0, nil, nil, nil))
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
		w.forward(encodeObject(KindPrefill, []entry{e}, w.s.width, res.Hidden, nil, nil))
		return nil
	}
	if end := it.pos + it.rows; end == ss.spec.PromptLen {
		w.emit([]entry{{seq: it.seq, pos: end, rows: 1}}, []int32{ss.sample(res.Logits)})
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
		w.forward(encodeObject(KindDecode, entries, w.s.width, res.Hidden, nil, nil))
		return nil
	}
	toks := make([]int32, len(items))
	nv := w.s.nVocab
	for i, ss := range states {
		toks[i] = ss.sample(res.Logits[i*nv : (i+1)*nv])
		entries[i].pos++
	}
	w.emit(entries, toks)
	return nil
}

// sample draws a sequence's next token from its logits.
func (ss *seqState) sample(logits []float32) int32 {
	t := ss.sampler.Sample(logits, ss.history)
	ss.history = append(ss.history, t)
	return t
}

// emit hands sampled tokens to rank 0: over the Out link, or directly in a
// pipeline of one stage.
func (w *worker) emit(entries []entry, toks []int32) {
	if !w.s.first {
		w.forward(encodeObject(KindToken, entries, 0, nil, toks, nil))
		return
	}
	for i, e := range entries {
		// Rank 0 produced these itself: they cannot be out of order.
		_ = w.onToken(e.seq, e.pos, toks[i])
	}
}

func (w *worker) stats() StageStats {
	st := w.counts
	st.Rank, st.Sequences, st.Pending, st.Live, st.Queued = w.s.cfg.Rank, len(w.seqs), len(w.pending), len(w.live), len(w.queue)
	for _, ss := range w.seqs {
		st.Positions += ss.cache.Len()
	}
	return st
}
