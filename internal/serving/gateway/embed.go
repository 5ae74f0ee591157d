package gateway

import (
	"context"
	"fmt"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

// Embed runs an embedding request on an instance of its model: it travels
// as a task like a generation (the gateway picks a ready instance from the
// replicated State; the worker on the instance's first node, handed the
// request, runs the runner's embed command and delivers one final chunk
// with the vectors). Cancelling ctx cancels the task.
func (g *Gateway) Embed(ctx context.Context, req request.EmbedRequest) (request.EmbedResult, error) {
	if err := req.Validate(); err != nil {
		return request.EmbedResult{}, err
	}
	if _, ok := g.cfg.Catalog().Get(req.Model); !ok {
		model, err := g.resolve(req.Model)
		if err != nil {
			if g.cfg.Resolve != nil {
				return request.EmbedResult{}, err
			}
			return request.EmbedResult{}, &fault.Error{Class: fault.ClassNotFound, Param: "model",
				Message: fmt.Sprintf("unknown model %s (GET /models lists the catalog)", fault.Quote(req.Model))}
		}
		req.Model = model
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the task, and its count in flight, once the answer is in
	chunks, err := g.submit(ctx, req.Model, request.TaskPayload{Embed: &req})
	if err != nil {
		return request.EmbedResult{}, err
	}
	for {
		var c request.Chunk
		var ok bool
		select {
		case c, ok = <-chunks:
		case <-ctx.Done():
			return request.EmbedResult{}, ctx.Err()
		}
		switch {
		case !ok:
			return request.EmbedResult{}, fault.Errorf(fault.ClassInternal, "the embedding task ended without an answer")
		case c.Kind == request.ChunkError && c.Error != nil:
			return request.EmbedResult{}, c.Error
		case c.Kind == request.ChunkError:
			return request.EmbedResult{}, fault.Errorf(fault.ClassInternal, "the embedding task failed without a reason")
		case c.Kind == request.ChunkDone && c.FinishReason == request.FinishCancelled:
			return request.EmbedResult{}, fault.Errorf(fault.ClassCancelled, "the embedding task was cancelled")
		case c.Kind == request.ChunkDone:
			if len(c.Embeddings) != len(req.Inputs) || c.Usage == nil {
				return request.EmbedResult{}, fault.Errorf(fault.ClassInternal, "the embedding task answered %d vectors for %d inputs", len(c.Embeddings), len(req.Inputs))
			}
			return request.EmbedResult{Embeddings: c.Embeddings, PromptTokens: c.Usage.PromptTokens}, nil
		}
		// A text model answers an embedding request with an error before
		// any delta; a delta here is skipped, and the task's end decides.
	}
}
