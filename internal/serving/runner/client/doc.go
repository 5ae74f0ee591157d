// Package client is the parent side of a runner: Client starts a runner
// child (our own binary re-executed, "skulk runner") through package
// supervise, speaks package proto to it, and watches it.
//
// The progress heartbeat feeds the Client's watchdog (watchdog.go): a
// runner with tasks in flight that stays silent for StallSilence, or
// heartbeats without running or completing a step and without a chunk for
// StallIdle plus four of its longest measured steps, is stalled; its tasks
// end with an error chunk of code runner_stalled and it is killed.
//
// The Client is safe for concurrent use; one goroutine owns its task table.
package client
