// Package responses translates the OpenAI Responses API (POST /v1/responses)
// to and from the shared vocabulary in package request. It is a pure
// translator: it reads no clock, no randomness and no network (ids and the
// created timestamp are inputs), it imports no net/http (a test enforces
// that), and its values are not safe for concurrent use. The net/http shell
// in package api is its only intended importer; that shell owns the one
// [Store] of a node and guards it.
//
// # Requests
//
// [DecodeRequest] decodes a body; [Continue] joins it to the stored
// conversation of previous_response_id and returns a validated
// [request.Request]. Unknown fields are ignored, because real clients send
// extras; a known field of the wrong JSON type is refused with an
// *fault.Error naming the field. The fields:
//
//	supported:  model; input as a string (one user message) or a list of
//	            items: messages (role user|assistant|system|developer,
//	            content a string or input_text/output_text/refusal parts),
//	            function_call (call_id, name, arguments) and
//	            function_call_output (call_id, output as a string or text
//	            parts) for tool round trips, reasoning items (their text
//	            becomes the next assistant message's reasoning);
//	            instructions (a system message first; as in OpenAI's API
//	            not carried into continuations); tools (function: name,
//	            description, parameters; strict is echoed, as request.Tool
//	            has no such switch); tool_choice (auto, none,
//	            required, {type:function,name}); max_output_tokens;
//	            temperature; top_p; text.format (text, json_object,
//	            json_schema); reasoning.effort (see below); stream; store;
//	            previous_response_id; include
//	            ["message.output_text.logprobs"] and top_logprobs
//	echoed only: metadata, user, parallel_tool_calls (runners may make
//	            several calls in one turn either way), reasoning.summary
//	            (Skulk's models write no separate summary: the reasoning
//	            item carries the reasoning text as content), text.verbosity
//	ignored:    truncation "auto" or "disabled" (a context is never
//	            truncated silently; an over-long prompt is refused, so the
//	            Response always says "disabled"),
//	            service_tier, safety_identifier, prompt_cache_key,
//	            prompt_cache_retention, stream_options, max_tool_calls,
//	            context_management, other include values, and any field
//	            this package does not know
//	refused:    background true, conversation, prompt (stored templates),
//	            a non-empty logit_bias, tools other than function (hosted
//	            tools), item types other than the four above (including
//	            item_reference), image/file/audio content parts, a
//	            function_call_output whose call_id answers no call in the
//	            conversation, max_output_tokens outside 1..2^20, an unknown
//	            reasoning.effort, another truncation value, an empty
//	            previous_response_id, and no input at all
//
// reasoning.effort maps to the chat template's enable_thinking: any effort
// but "none" sets it true, "none" sets it false, and no reasoning (or no
// effort) leaves the template's default. low, medium and high also set the
// template variable reasoning_effort, which gpt-oss's template reads.
//
// store (default true) keeps the response's conversation (its input,
// after the previous response's, and its output) so that a later request
// may name it in previous_response_id. The [Store] is bounded and in one
// node's memory: see its doc.
//
// # Responses
//
// A [Builder] folds a task's chunks into the [Response] object and yields
// the typed stream events of each chunk, so the streamed and the whole
// answer come from one code path. The events, as openai@6.30.1 types them
// (every one with type and sequence_number):
//
//	response.created, response.in_progress
//	per reasoning item: response.output_item.added, response.content_part.added
//	    (reasoning_text), response.reasoning_text.delta..., response.reasoning_text.done,
//	    response.content_part.done, response.output_item.done
//	per message item: response.output_item.added, response.content_part.added
//	    (output_text), response.output_text.delta..., response.output_text.done,
//	    response.content_part.done, response.output_item.done
//	per function call: response.output_item.added,
//	    response.function_call_arguments.delta, response.function_call_arguments.done,
//	    response.output_item.done
//	response.completed, or response.incomplete (max_output_tokens; or a
//	    task an operator cancelled, with status "cancelled")
//	on a failure after the stream began: error, then response.failed
package responses
