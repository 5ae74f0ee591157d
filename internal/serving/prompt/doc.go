// Package prompt turns a request into what a model computes and the
// model's tokens back into the request's answer: Prepare validates a
// request, renders its chat through the model's template (SetupChat) and
// tokenizes it, and builds the grammar of structured output (constrain.go);
// RequestParams maps its sampling settings to the engine's, with
// request's defaults (`skulk generate` maps its flags through it too);
// Answer streams the tokens a sequence.Sequencer computes as chunks (text
// cut at stop sequences, reasoning and tool calls parsed, logprobs) and
// decides the finish reason, the same whoever computed them.
package prompt
