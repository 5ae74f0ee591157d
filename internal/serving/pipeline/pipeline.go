package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/model"
)

// Options configure an in-process Pipeline.
type Options struct {
	// Threads is each stage's shard worker pool (model.Options.Threads).
	Threads int
	// LinkCapacity is the objects an in-process link buffers; 0 means 2.
	LinkCapacity int
	// NewLink, when set, makes the link of edge i (rank i to rank i+1; the
	// last edge returns tokens from rank n-1 to rank 0) instead of an
	// in-process channel link.
	NewLink  func(edge, ranks int) (Link, error)
	MaxBatch int
	Head     HeadConfig
	// Constrain is the last stage's StageConfig.Constrain.
	Constrain func(src []byte) (Constraint, error)
	// Trace is every stage's StageConfig.Trace; the stages call it
	// concurrently.
	Trace func(StepTrace)
}

// Pipeline runs a model split into stages in this process, one goroutine
// per stage, over in-process links (or Options.NewLink's). It is for tests,
// benchmarks and single-process use; across processes each process runs
// its own Stage.
type Pipeline struct {
	stages   []*Stage
	shards   []*model.Shard
	links    []Link
	cancel   context.CancelFunc // stops every stage
	stopHead context.CancelFunc // stops rank 0
	wg       sync.WaitGroup
	once     sync.Once
}

// Split returns the block ranges of n stages over a model of nLayer
// blocks, each of nLayer/n blocks or one more, the earlier ones larger.
func Split(nLayer, n int) []model.Range {
	rs := make([]model.Range, n)
	start := 0
	for i := range rs {
		size := nLayer / n
		if i < nLayer%n {
			size++
		}
		rs[i] = model.Range{Start: start, End: start + size, First: i == 0, Last: i == n-1}
		start += size
	}
	return rs
}

// New loads the stages of f's model over the given ranges (contiguous,
// from block 0 to the last; see Split) and starts them. f must stay open
// until Close.
func New(f *gguf.File, ranges []model.Range, opt Options) (*Pipeline, error) {
	n := len(ranges)
	if n == 0 {
		return nil, errors.New("pipeline: no stages")
	}
	p := &Pipeline{}
	fail := func(err error) (*Pipeline, error) {
		for _, l := range p.links {
			l.Close()
		}
		for _, s := range p.shards {
			s.Close()
		}
		return nil, err
	}
	for i, r := range ranges {
		if (i > 0 && r.Start != ranges[i-1].End) || r.First != (i == 0) || r.Last != (i == n-1) {
			return fail(fmt.Errorf("pipeline: stage %d's range %+v does not follow %+v", i, r, ranges[max(i-1, 0)]))
		}
		s, err := model.Load(f, r, model.Options{Threads: opt.Threads})
		if err != nil {
			return fail(err)
		}
		p.shards = append(p.shards, s)
	}
	if nl := p.shards[0].Config.NLayer; ranges[0].Start != 0 || ranges[n-1].End != nl {
		return fail(fmt.Errorf("pipeline: the stages hold blocks [%d, %d) of %d", ranges[0].Start, ranges[n-1].End, nl))
	}
	if n > 1 {
		for i := range n {
			var l Link
			var err error
			if opt.NewLink != nil {
				l, err = opt.NewLink(i, n)
			} else {
				l = NewChanLink(cmpOr(opt.LinkCapacity, 2))
			}
			if err != nil {
				return fail(err)
			}
			p.links = append(p.links, l)
		}
	}
	for i, sh := range p.shards {
		cfg := StageConfig{Shard: sh, Rank: i, Ranks: n, MaxBatch: opt.MaxBatch, Head: opt.Head, Constrain: opt.Constrain, Trace: opt.Trace}
		if n > 1 {
			cfg.In, cfg.Out = p.links[(i+n-1)%n], p.links[i]
		}
		st, err := NewStage(cfg)
		if err != nil {
			return fail(err)
		}
		p.stages = append(p.stages, st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	headCtx, stopHead := context.WithCancel(ctx)
	p.cancel, p.stopHead = cancel, stopHead
	for i, st := range p.stages {
		run := ctx
		if i == 0 {
			run = headCtx
		}
		p.wg.Go(func() { _ = st.Run(run) })
	}
	return p, nil
}

// Submit queues a generation on rank 0.
func (p *Pipeline) Submit(ctx context.Context, req Request) (*Sequence, error) {
	return p.stages[0].Submit(ctx, req)
}

// Stage returns rank i's stage.
func (p *Pipeline) Stage(i int) *Stage { return p.stages[i] }

// Ranks is the number of stages.
func (p *Pipeline) Ranks() int { return len(p.stages) }

// Stats snapshots every stage in rank order.
func (p *Pipeline) Stats(ctx context.Context) ([]StageStats, error) {
	out := make([]StageStats, len(p.stages))
	for i, st := range p.stages {
		s, err := st.Stats(ctx)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// Close stops every stage, waits for them and closes the shards. The
// sequences still in flight end with ErrStopped.
func (p *Pipeline) Close() {
	p.once.Do(func() {
		// Rank 0 first, so that its sequences end as stopped rather than
		// with the link faults the other ranks' stopping would cause.
		p.stopHead()
		<-p.stages[0].Done()
		p.cancel()
		p.wg.Wait()
		for _, l := range p.links {
			l.Close()
		}
		for _, s := range p.shards {
			s.Close()
		}
	})
}
