// Package runner is the runner child process, which loads a model and serves
// generation and embedding tasks, and Client, its parent-side handle.
//
// The worker starts a runner as our own binary re-executed ("skulk runner",
// see Main) through package supervise, and speaks to it with newline-delimited
// JSON over the child's stdin and stdout. Activations and other payload bytes
// never ride this channel; token text does. Every line is one JSON object,
// decoded strictly (unknown fields are errors) and at most MaxLine bytes long.
//
// Parent to child, one object per line, op selects the payload:
//
//	{"op":"load","load":{"model_path":..., "start":0, "end":0, "first":true, "last":true,
//	    "threads":0, "context_tokens":0, "chat_template_override":"", "instance":..., "rank":0}}
//	{"op":"generate","generate":{"task":"t1","request":<request.Request>}}
//	{"op":"embed","embed":{"task":"t2","request":<request.EmbedRequest>}}
//	{"op":"cancel","cancel":{"task":"t1"}}
//	{"op":"shutdown"}
//
// Child to parent:
//
//	{"type":"status","status":{"state":"loading|warming|ready|failed|stopped","reason":...,
//	    "weight_bytes":..., "context_tokens":...}}
//	{"type":"chunk","task":"t1","chunk":<request.Chunk>}
//	{"type":"embedding","task":"t2","embedding":<request.EmbedResult>} (or "error":<fault.Error>)
//	{"type":"error","task":"t1","error":<fault.Error>}
//	{"type":"progress","progress":{"steps":N,"in_step":true}}   (every HeartbeatInterval)
//
// The progress heartbeat feeds the Client's watchdog (watchdog.go): a
// runner with tasks in flight that stays silent for StallSilence, or
// heartbeats without running or completing a step and without a chunk for
// StallIdle plus four of its longest measured steps, is stalled; its tasks
// end with an error chunk of code runner_stalled and it is killed.
//
// A load is answered at once with status loading, then warming, then ready or
// failed (with the reason). A generate task streams chunks and always ends
// with exactly one chunk of kind done or error; a task the parent cancels ends
// with a done chunk whose finish_reason is "cancelled" (with the usage so
// far). An embed task is answered by exactly one "embedding" message, carrying
// the vectors or the error. An "error" message answers a line the child could
// not act on: a malformed or oversized line, an unknown op, a duplicate task
// id. It never ends a task, and the child keeps serving. shutdown (or the end
// of stdin) cancels every task, waits for their last chunks, reports stopped
// and exits.
//
// Inside the child one goroutine owns the task table, one reads stdin and one
// writes stdout; each task runs in its own goroutine, at most Slots at a
// time, the rest queued in arrival order. The tasks' sequences live in one
// more goroutine, the batcher, which owns their KV caches and the prefix
// cache: each step computes the running sequences' decode steps together with
// chunks of newly arrived prompts (planStep, model.Shard.StepRows), sized
// while streams run by the measured step times (pacer), so concurrent tasks
// share each read of the weights and a long prompt does not stall the
// running streams; results are the same as alone. That is the local
// sequencer (local.go); on a pipeline's rank 0 the stage is the sequencer
// instead, and a task takes the same path either way (generate): prepare,
// run the sequence.Spec on the sequencer, stream its tokens through the
// streamer, tell the finish reason. The Client is safe
// for concurrent use; one goroutine owns its task table.
package runner
