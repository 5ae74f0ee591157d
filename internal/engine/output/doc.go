// Package output post-processes generated text as it streams: it cuts the
// text at stop sequences (StopMatcher), splits <think> reasoning from the
// answer, and reads tool calls out of the answer in the dialects model
// families use (Parser). It works on text only, with no tokenizer.
//
// Every type here is a value owned by one generation and is not safe for
// concurrent use. Each holds back only the shortest tail of its input that
// could still change meaning (a partial stop string, tag or marker, or an
// unfinished tool-call block), so feeding the same text in any chunking
// gives the same output once Close/Flush has run. The package imports only
// the standard library.
package output
