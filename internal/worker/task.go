package worker

import (
	"cmp"
	"context"
	"slices"

	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
	"github.com/skulk/skulk/internal/state"
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

// adoptTasks starts the tasks of a fresh view that no event will announce
// again: created while this worker was not following (before the first
// election after a restart, during a resync), still pending, oldest first.
// Without this such a task waits for a runner forever and its client with
// it. One left over from an earlier process of its owner fails at once: its
// payload is gone.
func (l *loop) adoptTasks(ctx context.Context) {
	var waiting []ids.TaskID
	for id, t := range l.view.Tasks {
		if _, running := l.tasks[id]; !running && t.Status == state.TaskPending {
			waiting = append(waiting, id)
		}
	}
	slices.SortFunc(waiting, func(a, b ids.TaskID) int {
		return cmp.Or(cmp.Compare(l.view.Tasks[a].CreatedAtUnixMs, l.view.Tasks[b].CreatedAtUnixMs), cmp.Compare(a, b))
	})
	for _, id := range waiting {
		t := l.view.Tasks[id]
		l.startTask(ctx, event.TaskCreated{Task: id, Command: t.Command, TaskKind: t.Kind, Model: t.Model,
			Instance: t.Instance, Owner: t.Owner, Payload: t.Payload, CreatedAtUnixMs: t.CreatedAtUnixMs})
	}
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
