// Package chat renders a model's chat template: the Jinja text a GGUF carries
// as tokenizer.chat_template, applied to a conversation the way HuggingFace
// transformers' apply_chat_template applies it, byte for byte.
//
// The Jinja engine is github.com/ardanlabs/jinja. Where it differs from
// Python jinja2 as transformers configures it, this package works around it:
// the template source is normalised and rewritten before compilation
// (newlines, one trailing newline dropped, Python's strict typing of for,
// +, in and ~ restored through helper functions), and the filters and
// globals transformers installs (tojson, raise_exception, strftime_now) are
// supplied as render variables. Values keep JSON key order (Object), because
// templates print tool schemas with tojson and Python dicts keep insertion
// order.
//
// The package reads no clock: strftime_now formats Input.Now.
//
// A Template is immutable after Parse and safe for concurrent Render calls.
// The package imports only the standard library and the Jinja engine.
package chat
