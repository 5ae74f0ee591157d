// Package ollama translates Ollama's API (/api/chat, /api/generate,
// /api/tags, /api/show, /api/ps, /api/version, /api/embed,
// /api/embeddings) to and from the shared vocabulary in package request. It
// is a pure translator: it reads no clock, no randomness and no network
// (arrival times of chunks are inputs), it imports no net/http (a test
// enforces that), and its values are not safe for concurrent use. The
// net/http shell in package api is its only intended importer.
//
// # Requests
//
// [DecodeChatRequest] and [DecodeGenerateRequest] take a request body and
// return a validated [request.Request]. Unknown fields and unknown option
// names are ignored, because real clients send extras (Ollama itself only
// logs them); a known field of the wrong JSON type is refused with an
// *fault.Error naming the field. The fields of POST /api/chat:
//
//	supported:  model; messages (role system|user|assistant|tool, content,
//	            thinking (an earlier answer's reasoning), tool_calls
//	            (function.name, function.arguments as an object, id),
//	            tool_name and tool_call_id on tool results); tools
//	            (type function); format ("json": any JSON object; an object:
//	            a JSON Schema the output must match); think (true/false sets
//	            the template variable enable_thinking; "high"|"medium"|"low"
//	            also set reasoning_effort; the model's reasoning comes back
//	            in message.thinking); stream (default true: NDJSON lines,
//	            the last with done, done_reason and the metrics; false: one
//	            object); logprobs, top_logprobs; options (below);
//	            keep_alive (a number of seconds or a duration string: how
//	            long a model placed on demand stays loaded once idle; 0
//	            unloads it after the request, negative never; absent:
//	            SKULK_KEEP_ALIVE; explicit placements never unload)
//	ignored:    truncate and shift: an over-long prompt is refused,
//	            never cut
//	refused:    messages[].images (text only); roles other than the four
//
// A chat request with no messages (or a generate request with an empty
// prompt) is Ollama's "load the model" idiom: nothing is generated, the
// model is placed on demand when it has no instance, and the answer has
// done_reason "load" once it is ready. With keep_alive 0 it is the
// "unload" idiom (`ollama stop`): the model's instances placed on demand
// stop, and the answer has done_reason "unload".
//
// POST /api/generate takes model, prompt, system, raw, format, options,
// stream, think, logprobs, top_logprobs and keep_alive as above. Without raw
// the prompt is a user message (after system, if given) rendered through
// the model's chat template; with raw it is tokenized as is. Refused:
// template (Skulk renders the GGUF's Jinja template and cannot run an
// Ollama Go template; render the prompt yourself and send raw), suffix
// (no fill-in-the-middle), images, context (the token state of an earlier
// answer, which is never returned either), and system with raw. The answer
// carries the text in response and the reasoning in thinking.
//
// The options object:
//
//	supported:  temperature (0..2), top_p, top_k, min_p, seed (negative:
//	            unseeded), num_predict (the max tokens; -1, -2 and 0 mean
//	            the server's default cap, request.DefaultMaxTokens, as no
//	            request may run unbounded), stop (an array or a string),
//	            repeat_penalty, presence_penalty, frequency_penalty,
//	            repeat_last_n (the penalties' window over the answer: 64
//	            by default, 0 off, -1 all of it)
//	ignored:    num_ctx (the context window is stamped on the
//	            instance at placement; POST /place_instance sets it),
//	            num_thread, num_batch, num_gpu, main_gpu, numa, low_vram,
//	            f16_kv, use_mmap, use_mlock, vocab_only, logits_all,
//	            embedding_only (how an instance runs is the node's
//	            business, fixed at placement), num_keep (the context never
//	            shifts), penalize_newline (Ollama's own engine ignores it)
//	refused:    typical_p, tfs_z and mirostat at values other than the
//	            ones that turn them off (1, 1, 0): the engine has no such
//	            samplers
//
// # Responses
//
// [ChatStream] and [GenerateStream] turn a task's chunks into NDJSON lines;
// [ChatAccumulator] and [GenerateAccumulator] aggregate them into one
// answer. done_reason is "length" when the token cap ended the answer and
// "stop" otherwise (tool calls and cancels included). The metrics are
// measured at the API node ([Metrics]); load_duration is always 0.
// [ErrorFrom] builds Ollama's error document {"error": "..."}.
//
// # Embeddings
//
// [DecodeEmbedRequest] (POST /api/embed: model, input as a string or an
// array of strings, dimensions only at the model's own size; truncate,
// keep_alive and options accepted and ignored, an over-long input is
// refused rather than cut) and [DecodeEmbeddingsRequest] (POST
// /api/embeddings: model, prompt) return an [request.EmbedRequest]. /api/embed
// answers unit vectors and the token count ([EmbedFrom]); /api/embeddings
// one vector as the model computes it, not normalized, as Ollama does
// ([EmbeddingsFrom]). An empty input is the "load" idiom again: no vectors.
//
// # Models
//
// [Tags] (GET /api/tags) lists the models with a ready instance; [PS]
// (GET /api/ps) lists the ready instances; [Show] (POST /api/show)
// describes a catalog model. They read the node's catalog and state
// documents ([ParseCatalog], [ParseInstances]) and leave out what those do
// not say: no digest unless the catalog has one, no expires_at (instances
// do not expire), parameter size and quantization only from the GGUF file
// name's conventional parts.
package ollama
