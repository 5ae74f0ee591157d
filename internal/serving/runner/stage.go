package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sequence"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/link"
	"github.com/skulk/skulk/internal/serving/pipeline"
	"github.com/skulk/skulk/internal/serving/prompt"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// DefaultConnectTimeout bounds how long a pipeline stage waits for both of
// its links to be connected before its load fails.
const DefaultConnectTimeout = 120 * time.Second

// A pipeline's token objects carry every top_logprobs a request may ask
// for (a negative difference does not compile).
const _ = uint(pipeline.MaxTopLogprobs - request.MaxTopLogprobs)

// stageRun is a loaded runner's pipeline stage: its links, the goroutine
// running it, and how to stop it.
type stageRun struct {
	stage  *pipeline.Stage
	first  bool
	cancel context.CancelFunc
}

// openStage loads blocks [Start, End) of the model and joins the pipeline
// through the node's edge socket: the runner is ready only once both of its
// links reach its neighbours.
func openStage(spec proto.LoadSpec, opts serving, log *slog.Logger, warming func()) (*loaded, error) {
	ps := spec.Pipeline
	switch {
	case ps.Ranks < 2 || spec.Rank < 0 || spec.Rank >= ps.Ranks:
		return nil, fmt.Errorf("runner: load: rank %d of a pipeline of %d", spec.Rank, ps.Ranks)
	case spec.First != (spec.Rank == 0) || spec.Last != (spec.Rank == ps.Ranks-1):
		return nil, fmt.Errorf("runner: load: rank %d of %d with first=%v last=%v", spec.Rank, ps.Ranks, spec.First, spec.Last)
	case ps.Socket == "" || spec.Instance == "":
		return nil, errors.New("runner: load: a pipeline stage needs the node's edge socket and its instance")
	case spec.End <= spec.Start || spec.Start < 0:
		return nil, fmt.Errorf("runner: load: blocks [%d, %d)", spec.Start, spec.End)
	case spec.Threads < 0 || spec.ContextTokens < 0:
		return nil, fmt.Errorf("runner: load: threads (%d) and context_tokens (%d) must not be negative", spec.Threads, spec.ContextTokens)
	}
	m, err := engine.Open(spec.ModelPath, engine.Options{Threads: spec.Threads, Kernels: opts.kernels, NoPack: opts.noPack, CacheType: spec.CacheType,
		Range: &model.Range{Start: spec.Start, End: spec.End, First: spec.First, Last: spec.Last}})
	if err != nil {
		return nil, fmt.Errorf("runner: load: %w", err)
	}
	l := &loaded{m: m, context: spec.ContextTokens}
	if l.context == 0 || l.context > m.Config.ContextLength {
		l.context = m.Config.ContextLength
	}
	l.prompts = &prompt.Model{M: m, Context: l.context, MaxConstraintBytes: pipeline.MaxConstraintBytes}
	if spec.First {
		if l.prompts.Chat, err = prompt.SetupChat(m, spec.ChatTemplateOverride); err != nil {
			m.Close()
			return nil, err
		}
	}
	warming()
	timeout := DefaultConnectTimeout
	if ps.ConnectTimeoutMS > 0 {
		timeout = time.Duration(ps.ConnectTimeoutMS) * time.Millisecond
	}
	in, out, err := connectEdges(spec, timeout)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("runner: pipeline rank %d of %d: %w", spec.Rank, ps.Ranks, err)
	}
	maxObj := pipeline.MaxObjectBytes(m.Config, 0, 0)
	inLink := link.NewConnLink(in, maxObj)
	st, err := pipeline.NewStage(pipeline.StageConfig{Shard: m.Shard, Rank: spec.Rank, Ranks: ps.Ranks,
		In: inLink, Out: link.NewConnLink(out, maxObj), Logger: log,
		Head:      pipeline.HeadConfig{Context: l.context, EndOfGeneration: m.Tok.IsEOG},
		Constrain: l.stageConstraint})
	if err != nil {
		in.Close()
		out.Close()
		m.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go st.Run(ctx)
	go watchOut(out, inLink)
	if log.Enabled(ctx, slog.LevelDebug) {
		go reportStage(ctx, st, log, 5*time.Second)
	}
	l.stage = &stageRun{stage: st, first: spec.First, cancel: cancel}
	if spec.First {
		l.seqs = l.stage
	}
	log.Info("pipeline stage connected", "rank", spec.Rank, "ranks", ps.Ranks, "blocks", fmt.Sprintf("[%d, %d)", spec.Start, spec.End))
	return l, nil
}

// connectEdges opens the stage's two edge connections and waits until the
// node has relayed both through to the neighbours.
func connectEdges(spec proto.LoadSpec, timeout time.Duration) (in, out net.Conn, err error) {
	deadline := time.Now().Add(timeout)
	h := link.EdgeHello{Instance: spec.Instance, Rank: spec.Rank, Ranks: spec.Pipeline.Ranks}
	var conns []net.Conn
	defer func() {
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
		}
	}()
	for _, dir := range []string{link.EdgeIn, link.EdgeOut} {
		h.Dir = dir
		c, err := link.DialEdge(spec.Pipeline.Socket, h, time.Until(deadline))
		if err != nil {
			return nil, nil, fmt.Errorf("edge socket: %w", err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		if err := link.AwaitEdge(c, deadline); err != nil {
			return nil, nil, fmt.Errorf("link %s: %w", []string{"in", "out"}[i], err)
		}
	}
	return conns[0], conns[1], nil
}

// watchOut fails the stage as soon as the node closes its sending link.
// The node sends nothing on that connection after EdgeReady, so a read
// returns only when the link is gone (the next rank's runner died, the
// QUIC stream to its node broke or went silent); a stage that waits for
// its input would otherwise learn it only at its next send, and rank 0,
// waiting for a token that cannot come, never. Closing the receiving link
// makes the stage fail-stop, which ends the sequences in flight with an
// error and travels on around the ring.
func watchOut(out net.Conn, in pipeline.Link) {
	var b [1]byte
	out.Read(b[:])
	in.Close()
}

// reportStage logs, at debug level, the work a stage did in each period
// it did any: how much of the period it computed (busy) against the CPU
// time the runner process got, the mean decode micro-batch. It is how a
// benchmark sees whether the stages overlap. It stops with ctx.
func reportStage(ctx context.Context, st *pipeline.Stage, log *slog.Logger, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last pipeline.StageStats
	lastAt, lastCPU := time.Now(), processCPU()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, err := st.Stats(ctx)
		if err != nil {
			return
		}
		now, cpu := time.Now(), processCPU()
		if steps := s.DecodeSteps - last.DecodeSteps; steps > 0 || s.PrefillChunks > last.PrefillChunks {
			el := now.Sub(lastAt).Seconds()
			log.Debug("pipeline stage work", "rank", s.Rank, "seconds", el,
				"busy", (s.Busy-last.Busy).Seconds()/el, "cpu", (cpu-lastCPU).Seconds()/el,
				"decode_steps", steps, "mean_batch", float64(s.DecodeRows-last.DecodeRows)/float64(max(steps, 1)),
				"prefill_chunks", s.PrefillChunks-last.PrefillChunks, "live", s.Live, "sequences", s.Sequences)
		}
		last, lastAt, lastCPU = s, now, cpu
	}
}

// processCPU is the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// close stops the stage; its links close with it.
func (s *stageRun) close() {
	s.cancel()
	<-s.stage.Done()
}

// stageConstraint is the last rank's pipeline.StageConfig.Constrain: the
// grammar of a structured-output task, compiled from the schema rank 0
// compiled too (the answer's sequence.Spec carries it).
func (l *loaded) stageConstraint(src []byte) (pipeline.Constraint, error) {
	return l.prompts.Constraint(src)
}

// Generate runs spec on the pipeline (rank 0's stage; see
// pipeline.Stage.Generate), its failure told as the task's error.
func (s *stageRun) Generate(ctx context.Context, spec sequence.Spec, emit func(sequence.Token) error) (sequence.Stats, error) {
	st, err := s.stage.Generate(ctx, spec, emit)
	if err != nil {
		err = s.err(ctx, err)
	}
	return st, err
}

// err maps the end of a sequence to the task's error. A task cancelled
// because the stage failed (the runner shuts down) reports the failure.
func (s *stageRun) err(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		select {
		case <-s.stage.Done():
			if serr := s.stage.Err(); serr != nil && !errors.Is(serr, pipeline.ErrStopped) {
				err = serr
				break
			}
			return ctx.Err()
		default:
			return ctx.Err()
		}
	}
	var fe *pipeline.FaultError
	if errors.As(err, &fe) || errors.Is(err, pipeline.ErrLinkClosed) || errors.Is(err, pipeline.ErrStopped) {
		return fault.Errorf(fault.ClassUnavailable, "the pipeline of the model's stages failed (%v); the instance restarts, retry", err)
	}
	return fault.Errorf(fault.ClassInternal, "%v", err)
}
