// Package runner is the runner child process ("skulk runner", see Main):
// it loads a model and serves the generation and embedding tasks a node
// sends it over the protocol of package proto (package client is the
// node's side).
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
// streamer, tell the finish reason.
package runner
