package worker

import (
	"context"

	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/infer"
)

// startTask runs a task whose instance has its first rank on this node.
func (l *loop) startTask(ctx context.Context, tc event.TaskCreated) {
	inst, ok := l.view.Instances[tc.Instance]
	if !ok || len(inst.Placement) == 0 || inst.Placement[0].Node != l.w.cfg.Node {
		return
	}
	h := l.handles[key{tc.Instance, 0}]
	var r Runner
	if h != nil {
		r = h.runner
	}
	tctx, cancel := context.WithCancel(ctx)
	l.tasks[tc.Task] = cancel
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer l.w.post(ctx, taskEnded{tc.Task})
		l.w.runTask(tctx, ctx, tc, r)
	}()
}

// runTask streams one task from the runner to its owner and reports the
// outcome. tctx ends when the task is cancelled; ctx when the worker stops.
func (w *Worker) runTask(tctx, ctx context.Context, tc event.TaskCreated, r Runner) {
	w.report(ctx, event.TaskAcknowledged{Task: tc.Task, Node: w.cfg.Node})
	outcome, reason := w.stream(tctx, ctx, tc, r)
	w.report(ctx, event.TaskFinished{Task: tc.Task, Node: w.cfg.Node, Outcome: outcome, Reason: truncate(reason)})
}

func (w *Worker) stream(tctx, ctx context.Context, tc event.TaskCreated, r Runner) (event.TaskOutcome, string) {
	fail := func(c *infer.Error) (event.TaskOutcome, string) {
		w.cfg.Tasks.Deliver(ctx, tc.Task, tc.Owner, infer.Chunk{Kind: infer.ChunkError, Error: c})
		if c.Class == infer.ClassCancelled {
			return event.OutcomeCancelled, c.Message
		}
		return event.OutcomeFailed, c.Message
	}
	if r == nil {
		return fail(infer.Errorf(infer.ClassUnavailable, "%v; retry in a moment", errNoRunner))
	}
	p, err := w.cfg.Tasks.Payload(tctx, tc.Task, tc.Owner, tc.Payload)
	if err != nil {
		return fail(infer.Errorf(infer.ClassCancelled, "the request is gone: %v", err))
	}
	switch {
	case p.Embed != nil:
		return w.embed(tctx, ctx, tc, r, *p.Embed, fail)
	case p.Generate == nil:
		return fail(infer.Errorf(infer.ClassInternal, "the task carries no request"))
	}
	chunks, err := r.Generate(tctx, string(tc.Task), *p.Generate)
	if err != nil {
		return fail(infer.Errorf(infer.ClassInternal, "the runner refused the task: %v", err))
	}
	outcome, reason := event.OutcomeFailed, "the runner ended the task without a final chunk"
	for c := range chunks {
		switch c.Kind {
		case infer.ChunkDone:
			outcome, reason = event.OutcomeCompleted, c.FinishReason
			if c.FinishReason == infer.FinishCancelled {
				outcome = event.OutcomeCancelled
			}
		case infer.ChunkError:
			outcome, reason = event.OutcomeFailed, "error"
			if c.Error != nil {
				reason = c.Error.Message
				if c.Error.Class == infer.ClassCancelled {
					outcome = event.OutcomeCancelled
				}
			}
		}
		if err := w.cfg.Tasks.Deliver(ctx, tc.Task, tc.Owner, c); err != nil {
			w.cfg.Logger.Debug("could not deliver a chunk; the client is gone", "task", tc.Task, "err", err)
		}
	}
	return outcome, reason
}
