package worker

import (
	"context"
	"errors"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
)

// Embedder is the optional Runner capability that serves embedding tasks
// (runner.Client has it).
type Embedder interface {
	Embed(ctx context.Context, task string, req request.EmbedRequest) (request.EmbedResult, error)
}

// embed runs an embedding task on r; its stream is one chunk: done with the
// vectors and the prompt tokens, or error.
func (w *Worker) embed(ctx context.Context, r loadedRunner, task ids.TaskID, req request.EmbedRequest) (<-chan request.Chunk, error) {
	e, ok := r.Runner.(Embedder)
	if !ok {
		return nil, fault.Errorf(fault.ClassInternal, "the runner of this instance cannot embed")
	}
	r.rec.add(r.id, PhaseTaskStart, "embedding task "+string(task))
	out := make(chan request.Chunk, 1)
	tap := request.TapFrom(ctx)
	w.serving.Go(func() {
		defer tap.Done()
		defer close(out)
		res, err := e.Embed(ctx, string(task), req)
		outcome := outcomeCompleted
		if err != nil {
			outcome = outcomeFailed
		}
		r.rec.add(r.id, PhaseTaskEnd, "embedding task "+string(task)+" "+outcome)
		if err != nil {
			ie, ok := errors.AsType[*fault.Error](err)
			switch {
			case ok:
			case ctx.Err() != nil:
				ie = fault.Errorf(fault.ClassCancelled, "the embedding task was cancelled")
			default:
				ie = fault.Errorf(fault.ClassInternal, "the runner failed the embedding task: %v", err)
			}
			c := request.Chunk{Kind: request.ChunkError, Error: ie}
			tap.Observe(&c)
			out <- c
			return
		}
		c := request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishStop, Usage: &request.Usage{PromptTokens: res.PromptTokens}, Embeddings: res.Embeddings}
		tap.Observe(&c)
		out <- c
	})
	return out, nil
}
