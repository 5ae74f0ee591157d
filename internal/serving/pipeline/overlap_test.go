package pipeline

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// traces collects the stages' StepTraces (Options.Trace); the stages call
// add concurrently.
type traces struct {
	mu  sync.Mutex
	all []StepTrace
}

func (tr *traces) add(s StepTrace) {
	tr.mu.Lock()
	tr.all = append(tr.all, s)
	tr.mu.Unlock()
}

// decodeOverlap returns the wall time during which rank 0 and rank 1 were
// both computing decode steps, the decode time of rank 0, and how many
// pairs of their steps overlapped. It checks that overlapping steps carry
// different sequences (one sequence cannot be on two ranks at once).
func (tr *traces) decodeOverlap(t testing.TB) (both, rank0 time.Duration, pairs int) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var r0, r1 []StepTrace
	for _, s := range tr.all {
		switch {
		case s.Kind != KindDecode:
		case s.Rank == 0:
			r0 = append(r0, s)
			rank0 += s.End.Sub(s.Start)
		case s.Rank == 1:
			r1 = append(r1, s)
		}
	}
	for _, a := range r0 {
		for _, b := range r1 {
			from, to := later(a.Start, b.Start), earlier(a.End, b.End)
			if !to.After(from) {
				continue
			}
			for _, q := range a.Seqs {
				if slices.Contains(b.Seqs, q) {
					t.Fatalf("sequence %d in steps of rank 0 and rank 1 at once: %v and %v", q, a.Seqs, b.Seqs)
				}
			}
			both += to.Sub(from)
			pairs++
		}
	}
	return both, rank0, pairs
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// evenShape is a model whose stages cost about the same: wide blocks and a
// small vocabulary, so that the last rank's head adds little.
var evenShape = synth.Shape{Name: "even", Arch: "llama", NEmbd: 512, NLayer: 6, NHead: 8, NHeadKV: 8,
	NFF: 1536, NVocab: 512, RopeBase: 10000, CtxLen: 512}

// TestMicroBatchesOverlap decodes four sequences on two stages and checks,
// from the stages' traces, that the two ranks compute different
// micro-batches at the same time for a good part of the run (a single
// batch of every sequence would leave one rank idle while the other
// computes), and that each sequence still gets its single-shard tokens.
func TestMicroBatchesOverlap(t *testing.T) {
	path := synthModel(t, evenShape, tensor.Q8_0)
	prompts := randomPrompts(9, evenShape.NVocab, 4, 5, 6, 7)
	const tokens = 48
	for _, ranks := range []int{2, 3} {
		t.Run(fmt.Sprintf("ranks=%d", ranks), func(t *testing.T) {
			var tr traces
			p := testPipeline(t, path, ranks, Options{Head: HeadConfig{Slots: len(prompts)}, Trace: tr.add})
			reqs := make([]Request, len(prompts))
			for i, pr := range prompts {
				reqs[i] = Request{Prompt: pr, MaxTokens: tokens}
			}
			got := generate(t, p, reqs)
			for i, pr := range prompts {
				equalTokens(t, fmt.Sprintf("prompt %d", i), got[i], reference(t, path, pr, tokens, sample.Params{}))
			}
			// Rank 0 groups the sequences into micro-batches of two (four
			// over two or three ranks), though their first tokens come back
			// one by one.
			sizes := tr.decodeSizes(0)
			if full := countOf(sizes, 2); full < len(sizes)/2 {
				t.Errorf("rank 0's micro-batches hold %v sequences; want mostly 2", sizes)
			}
			both, rank0, pairs := tr.decodeOverlap(t)
			t.Logf("ranks 0 and 1 decoded at once for %v of rank 0's %v (%d pairs of steps)", both, rank0, pairs)
			// Every sequence generates 48 tokens. With two micro-batches in
			// flight on two ranks, nearly every step of rank 0 overlaps one
			// of rank 1 (on three, about half do); with one batch of every
			// sequence none would, but for the first tokens' stagger. The
			// bounds leave room for a loaded machine's preemptions.
			if pairs < tokens/2 || both < rank0/8 {
				t.Errorf("ranks 0 and 1 decoded at once for %v of rank 0's %v of decode steps (%d pairs of steps); want an eighth or more and at least %d pairs",
					both, rank0, pairs, tokens/2)
			}
		})
	}
}

// TestDownstreamKeepsMicroBatches hands rank 1 of 3 two decode objects
// before it computes either, and checks that it steps them one after the
// other as they came, not merged into one step: merged, they would travel
// on (and back to rank 0) as one micro-batch, and the other ranks would
// idle meanwhile.
func TestDownstreamKeepsMicroBatches(t *testing.T) {
	p := testPipeline(t, synthModel(t, evenShape, tensor.Q8_0), 3, Options{})
	sh := p.Stage(1).cfg.Shard
	s, err := NewStage(StageConfig{Shard: sh, Rank: 1, Ranks: 3, In: NewChanLink(1), Out: NewChanLink(1)})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorker(s)
	width := sh.Config.NEmbd
	groups := [][]uint64{{1, 3}, {2, 4}}
	for seq := uint64(1); seq <= 4; seq++ {
		open := object{kind: KindOpen, entries: []entry{{seq: seq}}, spec: Spec{PromptLen: 1, Capacity: 8}}
		if err := w.receive(inMsg{obj: open}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range groups {
		o := object{kind: KindDecode, width: width, hidden: make([]float32, len(g)*width)}
		for i, seq := range g {
			o.entries = append(o.entries, entry{seq: seq, pos: 0, rows: 1})
			o.hidden[i*width] = float32(seq) // rows that differ
		}
		if err := w.receive(inMsg{obj: o}); err != nil {
			t.Fatal(err)
		}
	}
	var steps [][]uint64
	for b := w.next(); b.kind != 0; b = w.next() {
		if b.kind == KindDecode {
			var seqs []uint64
			for _, k := range b.idx {
				seqs = append(seqs, w.pending[k].seq)
			}
			steps = append(steps, seqs)
		}
		if err := w.execute(b); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(steps) != fmt.Sprint(groups) {
		t.Fatalf("rank 1 stepped %v, want the micro-batches %v one by one", steps, groups)
	}
	if len(w.outq) != 4+len(groups) {
		t.Fatalf("rank 1 queued %d objects for rank 2, want 4 opens and %d decode objects", len(w.outq), len(groups))
	}
}

// decodeSizes lists the sizes of a rank's decode steps in order.
func (tr *traces) decodeSizes(rank int) []int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []int
	for _, s := range tr.all {
		if s.Rank == rank && s.Kind == KindDecode {
			out = append(out, len(s.Seqs))
		}
	}
	return out
}

func countOf(xs []int, v int) int {
	n := 0
	for _, x := range xs {
		if x == v {
			n++
		}
	}
	return n
}
