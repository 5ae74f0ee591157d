package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/skulk/skulk/internal/observe/trace"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// Serve runs a task on this node's runner of the instance's first rank and
// returns its chunk stream, which always ends with a done or an error chunk
// unless ctx ends first. Cancelling ctx cancels the task on the runner. The
// owner node calls it once the instance is chosen (in process when it is
// this node, over the data plane otherwise); nothing of a task passes
// through the control plane.
func (w *Worker) Serve(ctx context.Context, inst ids.InstanceID, task ids.TaskID, p request.TaskPayload) (<-chan request.Chunk, error) {
	var tt *taskTrace
	if sc := trace.ScopeFrom(ctx); sc.Rec != nil {
		tt = &taskTrace{Scope: sc, start: time.Now(), inst: inst, task: task}
		if st, err := w.cfg.Master.State(ctx); err == nil {
			for _, sh := range st.Instances[inst].Placement {
				tt.nodes = append(tt.nodes, sh.Node)
			}
		}
		if p.Generate != nil && len(tt.nodes) > 1 {
			// A split model's ranks time the request too.
			g := *p.Generate
			g.Trace = true
			p.Generate = &g
		}
	}
	r := w.runner(key{inst, 0})
	if r.Runner == nil {
		return nil, fault.Errorf(fault.ClassUnavailable, "instance %s has no ready runner on this node (it is loading or restarting); retry in a moment", inst)
	}
	if p.Embed != nil {
		return w.embed(ctx, r, task, *p.Embed)
	}
	if p.Generate == nil {
		return nil, fault.Errorf(fault.ClassInvalid, "the task carries no request")
	}
	if err := checkPromptFits(*p.Generate, r.status); err != nil {
		return nil, err
	}
	chunks, err := r.Generate(ctx, string(task), *p.Generate)
	if err != nil {
		r.rec.add(r.id, PhaseError, fmt.Sprintf("task %s refused: %v", task, err))
		if ie, ok := errors.AsType[*fault.Error](err); ok {
			return nil, ie
		}
		return nil, fault.Errorf(fault.ClassInternal, "the runner refused the task: %v", err)
	}
	r.rec.add(r.id, PhaseTaskStart, "task "+string(task))
	out := make(chan request.Chunk, 1)
	tap := request.TapFrom(ctx)
	w.serving.Go(func() {
		defer tap.Done()
		defer close(out)
		outcome := w.forward(ctx, chunks, out, tt, tap)
		tt.end(time.Now(), outcome) // a task cut short: what it did so far
		r.rec.add(r.id, PhaseTaskEnd, "task "+string(task)+" "+outcome)
		w.cfg.Logger.Debug("task ended", "task", task, "instance", inst, "outcome", outcome)
	})
	return out, nil
}

// checkPromptFits refuses, before it crosses the runner's pipe, a prompt
// that cannot fit the window: its text (the raw prompt, or the last
// message, which every chat template renders) has more bytes than the
// window's tokens can stand for. Megabytes of prompt would otherwise hold
// the pipe, and every other task's commands behind them, while the runner
// reads them only to refuse them.
func checkPromptFits(req request.Request, st proto.Status) error {
	if st.BytesPerToken <= 0 || st.ContextTokens <= 0 {
		return nil
	}
	n := len(req.Prompt)
	if len(req.Messages) > 0 {
		n = max(n, len(req.Messages[len(req.Messages)-1].Content))
	}
	if least := (n + st.BytesPerToken - 1) / st.BytesPerToken; least >= st.ContextTokens {
		param := "prompt"
		if len(req.Messages) > 0 {
			param = "messages"
		}
		return fault.ParamErrorf(param, "the prompt has at least %d tokens (%d bytes), but the context window is %d tokens; shorten it", least, n, st.ContextTokens)
	}
	return nil
}

// Task outcomes, for the log.
const (
	outcomeCompleted = "completed"
	outcomeFailed    = "failed"
	outcomeCancelled = "cancelled"
)

// forward passes the runner's chunks on, each heard by tap first (the
// owner's observation, when the owner is this node). A stream the runner ended without
// a final chunk (its runner stopped: the instance was deleted, the process
// crashed) gets an error chunk, so the client is never left with a silently
// truncated answer.
func (w *Worker) forward(ctx context.Context, chunks <-chan request.Chunk, out chan<- request.Chunk, tt *taskTrace, tap request.Tap) string {
	for c := range chunks {
		if c.Kind == request.ChunkDone && c.FinishReason == request.FinishCancelled && ctx.Err() == nil {
			// The client did not cancel: the runner was stopped under the
			// request (its instance torn down: a node holding it was lost,
			// or it was deleted). That is no answer, and must not read as
			// one that ended.
			c = request.Chunk{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassUnavailable,
				"the instance was stopped before the answer was complete (a node holding it was lost, or it was deleted); retry")}
		}
		if tt != nil {
			tt.chunk(&c)
		}
		tap.Observe(&c)
		select {
		case out <- c:
		case <-ctx.Done():
			return outcomeCancelled
		}
		switch {
		case c.Kind == request.ChunkDone && c.FinishReason == request.FinishCancelled:
			return outcomeCancelled
		case c.Kind == request.ChunkDone:
			return outcomeCompleted
		case c.Kind == request.ChunkError && c.Error != nil && c.Error.Class == fault.ClassCancelled:
			return outcomeCancelled
		case c.Kind == request.ChunkError:
			return outcomeFailed
		}
	}
	if ctx.Err() != nil {
		return outcomeCancelled
	}
	c := request.Chunk{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassUnavailable,
		"the runner stopped before the answer was complete (the instance was stopped or its runner crashed); retry")}
	tap.Observe(&c)
	select {
	case out <- c:
	case <-ctx.Done():
	}
	return outcomeFailed
}

// taskTrace records a traced task's spans on this node: worker.serve (from
// the hand-over to the runner's last chunk), and within it prefill (to the
// first output, text or a tool call, or the last chunk of an answer
// without one) and decode (from the first output to the last chunk). They
// are recorded before the last chunk is passed on, so that they travel
// with it to the owner. It lives on the task's forwarding goroutine.
type taskTrace struct {
	trace.Scope
	start time.Time
	first time.Time // the first output; zero before it
	inst  ids.InstanceID
	task  ids.TaskID
	done  bool
	nodes []ids.NodeID // the node of each rank
	ranks []request.RankTiming
}

func (t *taskTrace) chunk(c *request.Chunk) {
	switch {
	case c.Kind == request.ChunkDone || c.Kind == request.ChunkError:
		t.ranks, c.Ranks = c.Ranks, nil // spans here; no further
		outcome := outcomeCompleted
		if c.Kind == request.ChunkError {
			outcome = outcomeFailed
		}
		t.end(time.Now(), outcome)
	case t.first.IsZero() && (c.Kind == request.ChunkToolCall || c.Content != "" || c.Reasoning != ""):
		t.first = time.Now()
	}
}

// end records the spans once, as the task ends at now.
func (t *taskTrace) end(now time.Time, outcome string) {
	if t == nil || t.done {
		return
	}
	t.done = true
	serve := t.Rec.Add("worker.serve", 0, t.Parent, t.start, now, trace.Attr{Key: "instance", Value: string(t.inst)},
		trace.Attr{Key: "task", Value: string(t.task)}, trace.Attr{Key: "outcome", Value: outcome})
	if t.first.IsZero() {
		t.Rec.Add("prefill", 0, serve, t.start, now)
		return
	}
	t.Rec.Add("prefill", 0, serve, t.start, t.first)
	t.Rec.Add("decode", 0, serve, t.first, now)
	t.rankSpans(serve)
}

// rankSpans records each rank's part of a split model's answer as a span
// of the node that ran it (by that node's clock): from the sequence's open
// on the rank to its release, with the time its prefill chunks and decode
// steps kept the rank busy.
func (t *taskTrace) rankSpans(parent trace.SpanID) {
	for _, r := range t.ranks {
		node := ""
		if r.Rank < len(t.nodes) {
			node = string(t.nodes[r.Rank])
		}
		t.Rec.Merge(trace.Span{Name: "rank " + strconv.Itoa(r.Rank), Node: node, ID: trace.NewSpanID(), Parent: parent,
			Start: r.Opened, Duration: r.Released.Sub(r.Opened), Attrs: []trace.Attr{
				{Key: "prefill_rows", Value: strconv.Itoa(r.PrefillRows)},
				{Key: "prefill_busy_ms", Value: strconv.FormatFloat(float64(r.PrefillBusy.Microseconds())/1000, 'f', 3, 64)},
				{Key: "decode_steps", Value: strconv.Itoa(r.DecodeSteps)},
				{Key: "decode_busy_ms", Value: strconv.FormatFloat(float64(r.DecodeBusy.Microseconds())/1000, 'f', 3, 64)},
			}})
	}
}
