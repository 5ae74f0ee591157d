// Runs the official @anthropic-ai/sdk client against a Skulk API and prints
// one JSON document describing what it saw. Exits non-zero if a call fails
// in a way it should not.
//
//   node client.mjs <base-url> <model> [api-key]
//
// base-url is the API root WITHOUT /v1 (e.g. http://127.0.0.1:52415): the
// SDK adds /v1/messages itself. The key may also come from SKULK_API_KEY.
// The model must have a ready instance. The checks: one non-streamed and
// one streamed message; a tool round trip (a first answer forced to call
// get_weather, then a follow-up carrying the tool_result, with tool_choice
// none, that must answer in text); count_tokens; a request for a model that
// does not exist, which must fail with a 404; and one message authenticated
// with the x-api-key header alone. The assertions are about shapes, not
// content, so the script runs against a live model too.
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, model, keyArg] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error("usage: node client.mjs <base-url> <model> [api-key]");
  process.exit(2);
}
const apiKey = keyArg || process.env.SKULK_API_KEY || "none";
const options = { baseURL, maxRetries: 0, timeout: 300_000 };
const client = new Anthropic({ ...options, apiKey }); // sends Authorization: Bearer
const messages = [{ role: "user", content: "hello brave new world" }];
const out = {};
const failures = [];
const expect = (ok, what) => {
  if (!ok) failures.push(what);
};
const textOf = (msg) =>
  msg.content
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("");
const summary = (msg) => ({
  id: msg.id,
  type: msg.type,
  role: msg.role,
  model: msg.model,
  blocks: msg.content.map((b) => b.type),
  text: textOf(msg),
  stop_reason: msg.stop_reason,
  stop_sequence: msg.stop_sequence,
  usage: { input_tokens: msg.usage.input_tokens, output_tokens: msg.usage.output_tokens },
});

// A non-streamed message.
const message = await client.messages.create({ model, max_tokens: 64, temperature: 0, messages });
out.message = summary(message);
expect(message.type === "message" && message.role === "assistant", "message: type and role");
expect(message.id.startsWith("msg_"), "message: id starts with msg_");
expect(["end_turn", "max_tokens"].includes(message.stop_reason), "message: stop_reason end_turn or max_tokens");
expect(out.message.text.length > 0, "message: non-empty text");
expect(message.usage.input_tokens > 0 && message.usage.output_tokens > 0, "message: usage counts");

// A streamed message, through the SDK's accumulating MessageStream (which
// refuses events out of order).
const stream = client.messages.stream({ model, max_tokens: 64, temperature: 0, messages });
const events = {};
const order = [];
for await (const ev of stream) {
  events[ev.type] = (events[ev.type] ?? 0) + 1;
  if (order.at(-1) !== ev.type) order.push(ev.type);
}
const streamed = await stream.finalMessage();
out.stream = { events, order, ...summary(streamed) };
expect(order[0] === "message_start" && order.at(-1) === "message_stop", "stream: starts with message_start, ends with message_stop");
expect(events.message_start === 1 && events.message_delta === 1 && events.message_stop === 1, "stream: one message_start, message_delta, message_stop");
expect(events.content_block_start >= 1 && events.content_block_start === events.content_block_stop, "stream: every block started is stopped");
expect(events.content_block_delta >= 1, "stream: at least one delta");
expect(out.stream.text.length > 0, "stream: non-empty text");
expect(["end_turn", "max_tokens"].includes(streamed.stop_reason), "stream: stop_reason end_turn or max_tokens");
expect(streamed.usage.input_tokens > 0 && streamed.usage.output_tokens > 0, "stream: usage counts (message_delta)");

// A stop sequence taken from the middle of the first answer (greedy, so
// the same request gives the same text): the answer must end just before
// its first occurrence, with stop_reason stop_sequence naming it, both
// non-streamed and streamed.
const chars = Array.from(out.message.text);
if (chars.length >= 4 && out.message.blocks.every((b) => b === "text")) {
  const mid = Math.floor(chars.length / 2);
  const stop = chars.slice(mid, mid + 3).join("");
  const cut = out.message.text.slice(0, out.message.text.indexOf(stop));
  const req = { model, max_tokens: 64, temperature: 0, messages, stop_sequences: ["\u0000never", stop] };
  const stopped = await client.messages.create(req);
  const stoppedStream = await client.messages.stream(req).finalMessage();
  out.stop = { sequence: stop, message: summary(stopped), stream: summary(stoppedStream) };
  for (const [what, msg] of [["message", stopped], ["stream", stoppedStream]]) {
    expect(msg.stop_reason === "stop_sequence" && msg.stop_sequence === stop, `stop (${what}): stop_reason stop_sequence naming ${JSON.stringify(stop)}`);
    expect(textOf(msg) === cut, `stop (${what}): text cut before the stop sequence`);
  }
} else {
  failures.push("stop: the first answer is too short to take a stop sequence from");
}

// A tool round trip.
const tools = [
  {
    name: "get_weather",
    description: "Get the current weather in a city.",
    // maxLength and additionalProperties bound the arguments so that even a
    // tiny model's forced call completes within max_tokens.
    input_schema: { type: "object", properties: { city: { type: "string", maxLength: 24 } }, required: ["city"], additionalProperties: false },
  },
];
const question = { role: "user", content: "What is the weather in Paris?" };
const first = await client.messages.create({
  model,
  max_tokens: 128,
  temperature: 0,
  tools,
  tool_choice: { type: "tool", name: "get_weather" },
  messages: [question],
});
const call = first.content.find((b) => b.type === "tool_use");
out.tools = {
  first: { ...summary(first), tool_use_id: call?.id ?? null, name: call?.name ?? null, input: call?.input ?? null },
};
expect(first.stop_reason === "tool_use", "tools: first stop_reason tool_use");
expect(call && call.id.startsWith("toolu_") && call.name === "get_weather" && typeof call.input === "object", "tools: a get_weather tool_use block");
if (call) {
  const second = await client.messages.create({
    model,
    max_tokens: 64,
    temperature: 0,
    tools,
    tool_choice: { type: "none" },
    messages: [
      question,
      { role: "assistant", content: first.content },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: call.id, content: [{ type: "text", text: "Sunny, 18 degrees Celsius." }] }],
      },
    ],
  });
  out.tools.second = summary(second);
  expect(["end_turn", "max_tokens"].includes(second.stop_reason), "tools: second stop_reason end_turn or max_tokens");
  expect(out.tools.second.text.length > 0, "tools: second answer has text");
}

// count_tokens.
const counted = await client.messages.countTokens({ model, messages });
out.count_tokens = { input_tokens: counted.input_tokens };
expect(Number.isInteger(counted.input_tokens) && counted.input_tokens > 0, "count_tokens: a positive count");

// An unknown model.
try {
  await client.messages.create({ model: "skulk-client-check/no-such-model", max_tokens: 8, messages });
  out.not_found = { status: 200 };
} catch (err) {
  if (!(err instanceof Anthropic.APIError)) throw err;
  out.not_found = { status: err.status, type: err.type ?? null, message: err.apiMessage ?? err.message };
}
expect(out.not_found.status === 404 && out.not_found.type === "not_found_error", "not_found: 404 not_found_error");

// The x-api-key header alone (how Anthropic's own API takes keys). The
// subclass keeps the SDK from looking for credentials elsewhere.
class KeyHeaderClient extends Anthropic {
  _shouldResolveDefaultCredentials() {
    return false;
  }
}
const keyClient = new KeyHeaderClient({ ...options, apiKey: null, authToken: null, defaultHeaders: { "x-api-key": apiKey } });
try {
  const m = await keyClient.messages.create({ model, max_tokens: 64, temperature: 0, messages });
  out.x_api_key = { status: 200, text: textOf(m) };
} catch (err) {
  if (!(err instanceof Anthropic.APIError)) throw err;
  out.x_api_key = { status: err.status, type: err.type ?? null, message: err.apiMessage ?? err.message };
}
expect(out.x_api_key.status === 200, "x_api_key: accepted");

out.failures = failures;
console.log(JSON.stringify(out));
if (failures.length > 0) {
  console.error(`failed checks: ${failures.join("; ")}`);
  process.exit(1);
}
