// Package sequence is the contract of one generated sequence, whoever
// computes it: what a Sequencer is given (Spec), what it streams back
// (Token) and how it ended (Stats), and the one rule that decides when a
// sequence ends (Budget and Judge).
//
// A Sequencer is a way to run a model: the whole model in this process
// (the runner's batcher over engine.Model.Generate), rank 0 of a pipeline
// of stages across nodes (pipeline.Stage), or any later arrangement. They
// all end sequences by Judge, so a request gets the same answer, stop and
// finish reason however its model is laid out; what a request asks beyond
// tokens (stop strings, tool calls, structured output, the text) is the
// runner's, on top of any of them.
//
// The package is a leaf (it knows only the sampler's vocabulary) so that
// every layout can import it.
package sequence
