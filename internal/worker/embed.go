package worker

import (
	"context"
	"errors"

	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
)

// Embedder is the optional Runner capability that serves embedding tasks
// (runner.Client has it).
type Embedder interface {
	Embed(ctx context.Context, task string, req infer.EmbedRequest) (infer.EmbedResult, error)
}

// embed runs an embedding task on r; its stream is one chunk: done with the
// vectors and the prompt tokens, or error.
func (w *Worker) embed(ctx context.Context, r loadedRunner, task ids.TaskID, req infer.EmbedRequest) (<-chan infer.Chunk, error) {
	e, ok := r.Runner.(Embedder)
	if !ok {
		return nil, infer.Errorf(infer.ClassInternal, "the runner of this instance cannot embed")
	}
	r.rec.add(r.id, PhaseTaskStart, "embedding task "+string(task))
	out := make(chan infer.Chunk, 1)
	w.serving.Go(func() {
		defer close(out)
		res, err := e.Embed(ctx, string(task), req)
		outcome := outcomeCompleted
		if err != nil {
			outcome = outcomeFailed
		}
		r.rec.add(r.id, PhaseTaskEnd, "embedding task "+string(task)+" "+outcome)
		if err != nil {
			ie, ok := errors.AsType[*infer.Error](err)
			switch {
			case ok:
			case ctx.Err() != nil:
				ie = infer.Errorf(infer.ClassCancelled, "the embedding task was cancelled")
			default:
				ie = infer.Errorf(infer.ClassInternal, "the runner failed the embedding task: %v", err)
			}
			out <- infer.Chunk{Kind: infer.ChunkError, Error: ie}
			return
		}
		out <- infer.Chunk{Kind: infer.ChunkDone, FinishReason: infer.FinishStop, Usage: &infer.Usage{PromptTokens: res.PromptTokens}, Embeddings: res.Embeddings}
	})
	return out, nil
}
