// Package openai translates the OpenAI Chat Completions and Completions wire
// formats to and from the shared vocabulary in package request. It is a pure
// translator: it reads no clock, no randomness and no network (ids and the
// created timestamp are inputs), it imports no net/http (a test enforces
// that), and its values are not safe for concurrent use unless stated. The
// net/http shell in package api is its only intended importer.
//
// # Requests
//
// [DecodeChatRequest] and [DecodeCompletionRequest] take a request body and
// return a validated [request.Request]. Unknown fields are ignored, because real
// clients send extras; a known field of the wrong JSON type is refused with an
// *fault.Error naming the field. The fields of POST /v1/chat/completions:
//
//	supported:  model, messages (role system|developer|user|assistant|tool;
//	            content as a string, null, or an array of text parts;
//	            name, tool_calls, tool_call_id, reasoning_content),
//	            max_tokens, max_completion_tokens, temperature, top_p, seed,
//	            stop (string or array), logprobs, top_logprobs, stream,
//	            stream_options.include_usage, presence_penalty,
//	            frequency_penalty, tools, tool_choice, response_format
//	            (text, json_object, json_schema), n (only 1),
//	            and the common extensions top_k, min_p, repeat_penalty
//	            (or repetition_penalty), chat_template_kwargs;
//	            reasoning_effort low|medium|high sets the template variable
//	            reasoning_effort (gpt-oss reads it)
//	ignored:    user, metadata, store, service_tier, parallel_tool_calls,
//	            other reasoning_effort values, prediction, modalities ["text"],
//	            logit_bias {} (empty), stream_options without stream, and any
//	            field this package does not know
//	refused:    n > 1, content parts other than text (image_url,
//	            input_audio, file), audio output, a non-empty logit_bias,
//	            tools of a type other than function, max_tokens above
//	            [MaxTokensLimit]
//
// POST /v1/completions takes model, prompt (a string or an array of one
// string), max_tokens, temperature, top_p, seed, stop, logprobs (an integer:
// the number of alternatives), stream, stream_options.include_usage,
// presence_penalty, frequency_penalty, n (only 1), best_of (only 1), echo
// (only false), suffix (only empty), user (ignored) and the same extensions.
//
// # Responses
//
// [ChatStream] and [CompletionStream] turn a task's chunks into the objects
// of a streamed answer; [ChatAccumulator] and [CompletionAccumulator]
// aggregate them into one non-streamed answer. [ErrorFrom] builds OpenAI's
// error shape from a *fault.Error.
package openai
