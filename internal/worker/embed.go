package worker

import (
	"context"
	"errors"

	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/infer"
)

// Embedder is the optional Runner capability that serves embedding tasks
// (runner.Client has it).
type Embedder interface {
	Embed(ctx context.Context, task string, req infer.EmbedRequest) (infer.EmbedResult, error)
}

// embed runs an embedding task on r and delivers its answer as one chunk:
// done with the vectors and the prompt tokens, or error. tctx ends when the
// task is cancelled; ctx when the worker stops.
func (w *Worker) embed(tctx, ctx context.Context, tc event.TaskCreated, r Runner, req infer.EmbedRequest,
	fail func(*infer.Error) (event.TaskOutcome, string)) (event.TaskOutcome, string) {
	e, ok := r.(Embedder)
	if !ok {
		return fail(infer.Errorf(infer.ClassInternal, "the runner of this instance cannot embed"))
	}
	res, err := e.Embed(tctx, string(tc.Task), req)
	if err != nil {
		ie, ok := errors.AsType[*infer.Error](err)
		switch {
		case ok:
		case tctx.Err() != nil:
			ie = infer.Errorf(infer.ClassCancelled, "the embedding task was cancelled")
		default:
			ie = infer.Errorf(infer.ClassInternal, "the runner failed the embedding task: %v", err)
		}
		return fail(ie)
	}
	c := infer.Chunk{Kind: infer.ChunkDone, FinishReason: infer.FinishStop, Usage: &infer.Usage{PromptTokens: res.PromptTokens}, Embeddings: res.Embeddings}
	if err := w.cfg.Tasks.Deliver(ctx, tc.Task, tc.Owner, c); err != nil {
		w.cfg.Logger.Debug("could not deliver the embeddings; the client is gone", "task", tc.Task, "err", err)
	}
	return event.OutcomeCompleted, infer.FinishStop
}
