// Runs the official openai npm client's Responses API against a Skulk API
// and prints one JSON document describing what it saw. Exits non-zero if a
// call fails in a way it should not, whatever the model.
//
//   node responses.mjs <base-url> <model> [api-key]
//
// base-url is the API root including /v1 (e.g. http://127.0.0.1:52415/v1);
// the key may also come from SKULK_API_KEY. The model must have a ready
// instance. The checks: one non-streamed and one streamed
// client.responses.create, a function-tool round trip continued with
// previous_response_id, and a previous_response_id that the node does not
// know, which must fail with a 400 naming the field.
import OpenAI from "openai";

const [baseURL, model, keyArg] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error("usage: node responses.mjs <base-url> <model> [api-key]");
  process.exit(2);
}
const client = new OpenAI({
  baseURL,
  apiKey: keyArg || process.env.SKULK_API_KEY || "none",
  maxRetries: 0,
  timeout: 120_000,
});
const input = "hello brave new world";
const out = {};
const problems = [];

const whole = await client.responses.create({ model, input, max_output_tokens: 64, temperature: 0 });
out.whole = {
  id: whole.id,
  object: whole.object,
  status: whole.status,
  output_text: whole.output_text, // computed by the SDK from output
  output_types: whole.output.map((item) => item.type),
  usage: whole.usage,
};
if (whole.object !== "response" || !["completed", "incomplete"].includes(whole.status)) {
  problems.push(`non-streamed: object ${whole.object}, status ${whole.status}`);
}

const stream = await client.responses.create({ model, input, max_output_tokens: 64, temperature: 0, stream: true });
const s = { events: [], deltas: "", completed: false, completed_text: null, sequence_contiguous: true };
for await (const event of stream) {
  if (event.sequence_number !== s.events.length) s.sequence_contiguous = false;
  s.events.push(event.type);
  if (event.type === "response.output_text.delta") s.deltas += event.delta;
  if (event.type === "response.completed" || event.type === "response.incomplete") {
    s.completed = true;
    s.completed_text = event.response.output
      .filter((item) => item.type === "message")
      .flatMap((item) => item.content)
      .filter((part) => part.type === "output_text")
      .map((part) => part.text)
      .join("");
  }
}
out.stream = s;
if (!s.completed || !s.sequence_contiguous || s.events[0] !== "response.created") {
  problems.push(`streamed: events ${s.events.join(", ")}`);
}

const tools = [
  {
    type: "function",
    name: "get_weather",
    description: "Current weather in a city",
    // maxLength bounds the arguments so that even a tiny model's forced call
    // completes within max_output_tokens whatever it samples.
    parameters: { type: "object", properties: { city: { type: "string", maxLength: 24 } }, required: ["city"], additionalProperties: false },
    strict: true,
  },
];
const call = await client.responses.create({
  model,
  input: "What is the weather in Oslo? Use the tool.",
  tools,
  tool_choice: "required",
  max_output_tokens: 128,
  temperature: 0,
});
const fc = call.output.find((item) => item.type === "function_call");
out.tools = { call_name: fc?.name ?? null, call_id: fc?.call_id ?? null, arguments: fc?.arguments ?? null };
if (!fc) {
  problems.push(`tool round trip: no function_call in ${JSON.stringify(call.output)}`);
} else {
  const followUp = await client.responses.create({
    model,
    previous_response_id: call.id,
    input: [{ type: "function_call_output", call_id: fc.call_id, output: "sunny, 21 C" }],
    tools,
    tool_choice: "none",
    max_output_tokens: 128,
  });
  out.tools.follow_up_text = followUp.output_text;
  out.tools.follow_up_previous = followUp.previous_response_id ?? null;
  if (followUp.previous_response_id !== call.id) {
    problems.push(`tool round trip: follow-up names previous ${followUp.previous_response_id}, want ${call.id}`);
  }
}

try {
  await client.responses.create({ model, input, previous_response_id: "resp_skulk_client_check_unknown" });
  out.unknown_previous = { status: 200 };
} catch (err) {
  if (!(err instanceof OpenAI.APIError)) throw err;
  out.unknown_previous = { status: err.status, param: err.param ?? null, message: err.message };
}
if (out.unknown_previous.status !== 400) {
  problems.push(`an unknown previous_response_id answered ${out.unknown_previous.status}, want 400`);
}

console.log(JSON.stringify(out));
if (problems.length > 0) {
  for (const p of problems) console.error(p);
  process.exit(1);
}
