package runner

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/skulk/skulk/internal/engine/sequence"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/prompt"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// task is one generate command. The server goroutine owns the struct; run
// reads only id and req.
type task struct {
	id     string
	req    request.Request
	cancel context.CancelFunc // set when it starts running
}

// run generates the task's answer and sends its chunks, ending with exactly
// one done or error chunk.
func (t *task) run(ctx context.Context, l *loaded, log *slog.Logger, out chan<- proto.Message) {
	emit := func(c request.Chunk) { out <- proto.Message{Type: proto.TypeChunk, Task: t.id, Chunk: &c} }
	start := time.Now()
	end, err := generate(ctx, l, t.req, emit)
	usage, finish := end.usage, end.finish
	switch {
	case err == nil:
		emit(request.Chunk{Kind: request.ChunkDone, FinishReason: finish, StopSequence: end.stop, Usage: &usage, Ranks: end.ranks})
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		emit(request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishCancelled, Usage: &usage, Ranks: end.ranks})
		finish = request.FinishCancelled
	default:
		var ie *fault.Error
		if !errors.As(err, &ie) {
			ie = fault.Errorf(fault.ClassInternal, "%v", err)
		}
		emit(request.Chunk{Kind: request.ChunkError, Error: ie})
		log.Warn("task failed", "class", ie.Class, "err", err)
		return
	}
	log.Debug("task done", "finish", finish, "prompt_tokens", usage.PromptTokens,
		"completion_tokens", usage.CompletionTokens, "took", time.Since(start))
}

// ending is how a generation ended: its usage, finish reason and the stop
// sequence that ended it, if one did.
type ending struct {
	usage  request.Usage
	finish string
	stop   string
	ranks  []request.RankTiming // a traced request's, on a split model
}

// generate runs one request to its end and says how it ended (the usage
// counts what was done on errors too). Chunks other than the last go to
// emit. It is the one path of every task, whoever computes its tokens: it
// prepares the request (prompt.Prepare: prompt, sampling, the grammar of
// structured output), runs the sequence on the loaded model's sequencer
// (local, or a pipeline's head) with the answer (prompt.Answer: text, stop
// sequences, reasoning and tool-call parsing, logprobs) taking its tokens,
// then has the answer tell the finish reason.
func generate(ctx context.Context, l *loaded, req request.Request, emit func(request.Chunk)) (ending, error) {
	var end ending
	p, err := prompt.Prepare(ctx, l.prompts, req)
	if err != nil {
		return end, err
	}
	end.usage.PromptTokens = len(p.Prompt)
	if req.CountOnly {
		end.finish = request.FinishStop
		return end, nil
	}
	if err := ctx.Err(); err != nil {
		return end, err
	}
	ans, err := prompt.Start(l.prompts, p, req, emit)
	if err != nil {
		return end, err
	}
	spec := ans.Spec()
	spec.Trace = req.Trace
	// The prompt's size, and how much of it the prefix cache holds, go
	// out before prompt processing, so a stream that opens with them
	// (Anthropic's message_start) carries what the final usage will say.
	spec.Admitted = func(cached int) {
		emit(request.Chunk{Kind: request.ChunkDelta, Usage: &request.Usage{PromptTokens: len(p.Prompt), CachedTokens: cached}})
	}
	stats, err := l.seqs.Generate(ctx, spec, ans.Token)
	for _, r := range stats.Ranks {
		end.ranks = append(end.ranks, request.RankTiming(r))
	}
	end.usage.CompletionTokens = stats.GeneratedTokens
	end.usage.CachedTokens = stats.CachedTokens
	end.usage.Timings = timingsOf(stats)
	if err != nil {
		return end, err
	}
	end.finish, end.stop, err = ans.Finish(stats.FinishReason)
	return end, err
}

// timingsOf is a sequence's timings: cached prompt tokens are not
// evaluated, so not counted in prompt_n.
func timingsOf(s sequence.Stats) *request.Timings {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	t := request.NewTimings(s.CachedTokens, s.PromptTokens-s.CachedTokens, ms(s.Prefill), s.GeneratedTokens, ms(s.Decode))
	if s.DraftTokens > 0 {
		t.DraftN, t.DraftNAccepted = s.DraftTokens, s.DraftAccepted
	}
	return t
}
