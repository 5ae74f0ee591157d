package gateway

import (
	"context"
	"fmt"

	"github.com/skulk/skulk/internal/infer"
)

// Embed runs an embedding request on an instance of its model: it travels
// as a task like a generation (TextGeneration binds it to an instance; the
// worker on the instance's first node, handed the request, runs the runner's
// embed command and delivers one final chunk with the vectors). Cancelling
// ctx cancels the task.
func (g *Gateway) Embed(ctx context.Context, req infer.EmbedRequest) (infer.EmbedResult, error) {
	if err := req.Validate(); err != nil {
		return infer.EmbedResult{}, err
	}
	if _, ok := g.cfg.Catalog().Get(req.Model); !ok {
		return infer.EmbedResult{}, &infer.Error{Class: infer.ClassNotFound, Param: "model",
			Message: fmt.Sprintf("unknown model %s (GET /models lists the catalog)", infer.Quote(req.Model))}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the watcher submit started once the answer is in
	chunks, err := g.submit(ctx, req.Model, infer.TaskPayload{Embed: &req})
	if err != nil {
		return infer.EmbedResult{}, err
	}
	for {
		var c infer.Chunk
		var ok bool
		select {
		case c, ok = <-chunks:
		case <-ctx.Done():
			return infer.EmbedResult{}, ctx.Err()
		}
		switch {
		case !ok:
			return infer.EmbedResult{}, infer.Errorf(infer.ClassInternal, "the embedding task ended without an answer")
		case c.Kind == infer.ChunkError && c.Error != nil:
			return infer.EmbedResult{}, c.Error
		case c.Kind == infer.ChunkError:
			return infer.EmbedResult{}, infer.Errorf(infer.ClassInternal, "the embedding task failed without a reason")
		case c.Kind == infer.ChunkDone && c.FinishReason == infer.FinishCancelled:
			return infer.EmbedResult{}, infer.Errorf(infer.ClassCancelled, "the embedding task was cancelled")
		case c.Kind == infer.ChunkDone:
			if len(c.Embeddings) != len(req.Inputs) || c.Usage == nil {
				return infer.EmbedResult{}, infer.Errorf(infer.ClassInternal, "the embedding task answered %d vectors for %d inputs", len(c.Embeddings), len(req.Inputs))
			}
			return infer.EmbedResult{Embeddings: c.Embeddings, PromptTokens: c.Usage.PromptTokens}, nil
		}
		// A text model answers an embedding request with an error before
		// any delta; a delta here is skipped, and the task's end decides.
	}
}
