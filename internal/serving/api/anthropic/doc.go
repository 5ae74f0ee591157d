// Package anthropic translates Anthropic's Messages wire format (POST
// /v1/messages and POST /v1/messages/count_tokens) to and from the shared
// vocabulary in package request. It is a pure translator: it reads no clock,
// no randomness and no network (ids are inputs), it imports no net/http (a
// test enforces that), and its values are not safe for concurrent use. The
// net/http shell in package api is its only intended importer.
//
// # Requests
//
// [DecodeMessagesRequest] and [DecodeCountTokensRequest] take a request body
// and return a validated [request.Request]. Unknown fields are ignored,
// because real clients send extras; a known field of the wrong JSON type is
// refused with a *fault.Error naming the field. The fields of POST
// /v1/messages:
//
//	supported:  model; max_tokens (required, 1..MaxTokensLimit);
//	            system (a string or an array of text blocks);
//	            messages (role user|assistant, and system as newer
//	            clients send it; content as a string or an array of
//	            blocks: text, tool_use and thinking in assistant turns,
//	            tool_result in user turns with string or text-block content);
//	            tools (name, description, input_schema; type absent or
//	            "custom"); tool_choice (auto, any, tool with a name, none);
//	            stop_sequences (at most 16, none empty); temperature (0..1),
//	            top_p (0..1), top_k; thinking ({type:"enabled",
//	            budget_tokens} and {type:"adaptive"} set the chat template's
//	            enable_thinking to true, {type:"disabled"} to false);
//	            output_config.format ({type:"json_schema",schema})
//	            constrains the answer to the schema; stream
//	ignored:    metadata (user_id), service_tier, cache_control (top level
//	            and on blocks and tools), tool_choice.disable_parallel_tool_use,
//	            tool_result.is_error (infer has no way to mark a failed tool
//	            result; the result's text reaches the model), the value of
//	            thinking.budget_tokens (checked: positive and below
//	            max_tokens; the runner does not cap reasoning separately,
//	            max_tokens caps reasoning and answer together), thinking.display,
//	            output_config.effort, redacted_thinking blocks (opaque),
//	            thinking blocks' signatures, and any field this package does
//	            not know
//	refused:    image, document and every other non-text block (the models
//	            served are text models), server tools (web search, code
//	            execution, computer use...: a tools entry with another type),
//	            a final assistant message (Anthropic's "prefill", which asks
//	            the model to continue that message: infer has no way to say
//	            "continue, do not open a new turn"), tool_choice naming a tool
//	            that is not offered, a missing max_tokens
//
// POST /v1/messages/count_tokens takes the same body; max_tokens, sampling
// and stream are not part of it and are ignored. The request is CountOnly:
// the runner renders and tokenizes the prompt, and the final chunk's usage
// is the count.
//
// # Responses
//
// [Accumulator] aggregates a task's chunks into one [Message]; [Stream]
// turns them into the server-sent events of a streamed answer in
// Anthropic's order (message_start, ping, content_block_start /
// content_block_delta / content_block_stop per block, message_delta,
// message_stop). Reasoning becomes thinking blocks (with an empty
// signature), content becomes text blocks, and each tool call a tool_use
// block whose id is minted from the answer's id ("toolu_<unique>_<n>") and
// whose input is the call's arguments object (arguments that are not a JSON
// object, which infer rules out, would travel as a JSON string rather than
// as invalid JSON).
// Finish reasons map as stop -> end_turn, length -> max_tokens, tool_calls
// (or any answer with a tool call) -> tool_use, and a stop that one of the
// request's stop_sequences caused -> stop_sequence, naming it in
// stop_sequence (the shortest of several that start at the same place).
//
// message_start carries usage.input_tokens from the runner's first chunk,
// an empty delta with the prompt count sent before prompt processing (0 only
// if a ping had to open the stream first); message_delta repeats
// input_tokens with output_tokens, as clients take its usage as cumulative
// totals.
//
// [ErrorFrom] builds Anthropic's error document from a *fault.Error and
// the status it is answered with.
package anthropic
